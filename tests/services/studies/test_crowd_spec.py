"""The study file's ``crowd:`` block and per-environment ``countdown_s``."""

from __future__ import annotations

import pytest
import yaml

from server.errors import Invalid
from server.services.studies import study_files

BASE = """
name: Crowd
environments:
  - id: cartpole
    name: CartPole
    source: {kind: gymnasium, id: CartPole-v1}
    mode: async
    countdown_s: 3
    episodes_per_participant: 2
crowd:
  consent: |
    I agree to **take part**.
  assignment: balanced
  allow_anonymous: true
  completion_code: C0MPLETE-1
  screenout_code: SCREENED
  completion_url: "https://example.org/done?code={code}"
  requirements: {min_episodes: 2, min_play_time_s: 30}
"""


def test_crowd_block_parses_and_round_trips():
    spec = study_files.load_yaml(BASE)
    assert spec.crowd.assignment == "balanced" and spec.crowd.allow_anonymous
    assert spec.crowd.requirements.min_episodes == 2
    assert spec.environments[0].countdown_s == 3
    assert study_files.load_yaml(study_files.dump_yaml(spec)) == spec


def test_defaults_leave_the_file_unchanged():
    spec = study_files.load_yaml(BASE.split("crowd:")[0])
    assert spec.crowd.assignment == "choice" and spec.crowd.consent == ""
    assert "crowd" not in study_files.dump_yaml(spec)


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "data:text/html,x", "ftp://example.org/", "https://", "//example.org",
     "https://exa mple.org/", "https://example.org/\x07"],
)  # fmt: skip
def test_redirect_urls_must_be_http(url):
    text = BASE.replace('"https://example.org/done?code={code}"', repr(url).replace("'", '"'))
    with pytest.raises(Invalid) as err:
        study_files.load_yaml(text)
    assert err.value.detail[0]["loc"] == ["crowd", "completion_url"]


@pytest.mark.parametrize("where, value", [
    (("crowd", "completion_code"), "has space"), (("crowd", "screenout_code"), "<b>"),
    (("crowd", "assignment"), "random"), (("environments", 0, "countdown_s"), 11),
])  # fmt: skip
def test_bad_values_are_refused_with_their_path(where, value):
    data = yaml.safe_load(BASE)
    target = data
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    with pytest.raises(Invalid) as err:
        study_files.parse_spec(data, prefix=())
    assert tuple(err.value.detail[0]["loc"][: len(where)]) == where


def test_a_requirement_the_quotas_cannot_give_is_a_problem():
    text = BASE.replace("episodes_per_participant: 2", "episodes_per_participant: 1")
    with pytest.raises(Invalid) as err:
        study_files.load_yaml(text)
    (problem,) = err.value.detail
    assert problem["loc"] == ["crowd"]
    assert "requirements.min_episodes is 2" in problem["msg"] and "at most 1" in problem["msg"]


def test_inputs_default_to_keyboard_and_gamepad_and_round_trip():
    assert study_files.load_yaml(BASE).crowd.inputs == ["keyboard", "gamepad"]
    spec = study_files.load_yaml(BASE + "  inputs: [keyboard, touch]\n")
    assert spec.crowd.inputs == ["keyboard", "touch"]
    assert "- touch" in study_files.dump_yaml(spec)
    with pytest.raises(Invalid) as err:
        study_files.load_yaml(BASE + "  inputs: [keyboard, mouse]\n")
    assert err.value.detail[0]["loc"] == ["crowd", "inputs", 1]
