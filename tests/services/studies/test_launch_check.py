"""The pre-launch checklist read from a spec (and its validation reports)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from server.errors import Conflict, Invalid
from server.main import WEB_DIR
from server.services.studies import feedback_check, launch_check
from server.services.studies.checklist_items import ENV_LABELS, STUDY_LABELS
from server.study_spec import StudySpec
from tests.factories import spec_dict


def _spec(crowd: dict[str, Any] | None = None, **env: Any) -> StudySpec:
    data = spec_dict("Checked", **env)
    if crowd is not None:
        data["crowd"] = crowd
    return StudySpec.model_validate(data)


def _codes(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["code"]: i for i in items}


DIRECT = {"platforms": ["direct"]}


def test_a_direct_link_study_in_sync_mode_has_nothing_to_say():
    assert launch_check.checklist(_spec(DIRECT)) == []


def test_a_prolific_study_without_a_completion_code_is_an_error_at_its_field():
    items = launch_check.checklist(_spec({"platforms": ["prolific"]}))
    found = _codes(items)
    error = found["no_completion_code"]
    assert error["level"] == "error" and items[0] is error  # errors come first
    assert error["field"] == "crowd.completion_code" and error["label"] == "Completion code"
    assert error["loc"] == ["spec", "crowd", "completion_code"] and error["msg"] == error["message"]
    assert "no completion code" in error["message"] and "Completion code" in error["fix"]
    assert found["no_screenout_code"]["level"] == "warning"
    # a code, or a redirect of the study's own, settles it
    for settled in ({"completion_code": "C0DE"}, {"completion_url": "https://example.org/done"}):
        again = _codes(launch_check.checklist(_spec({"platforms": ["prolific"], **settled})))
        assert "no_completion_code" not in again


def test_mturk_submits_the_hit_so_no_code_is_no_error():
    assert launch_check.checklist(_spec({"platforms": ["mturk"]})) == []


def test_a_study_that_does_not_say_its_platform_warns_only_without_a_code():
    (item,) = launch_check.checklist(_spec())
    assert (item["code"], item["level"], item["field"]) == (
        "platform_not_said", "warning", "crowd.platforms",
    )  # fmt: skip
    assert item["label"] == "Participants come from"
    assert launch_check.checklist(_spec({"completion_code": "C0DE"})) == []


def test_a_real_time_game_with_taps_and_no_step_on_input_warns():
    breakout = {"kind": "gymnasium", "id": "ALE/Breakout-v5"}
    found = _codes(launch_check.checklist(_spec(DIRECT, source=breakout, mode="async", fps=60)))
    item = found["step_on_input_off"]
    assert item["field"] == "environments.0.step_on_input"
    assert item["label"] == "Step on input (async)" and "17 ms at 60 steps/s" in item["message"]
    ticked = _spec(DIRECT, source=breakout, mode="async", fps=60, step_on_input=True)
    assert launch_check.checklist(ticked) == []
    assert launch_check.checklist(_spec(DIRECT, source=breakout, mode="sync")) == []


def test_held_and_toggled_vector_keys_are_no_taps():
    """An arm's keys (held deltas, a latched gripper) are not told to step on input, which
    would make its steps irregular; a discrete pick among them is."""
    held = {"keys": {"ArrowLeft": [-1.0], "ArrowRight": [1.0]}}
    pendulum = {"kind": "gymnasium", "id": "Pendulum-v1"}
    spec = _spec(DIRECT, source=pendulum, mode="async", controls=held)
    assert launch_check.checklist(spec) == []
    toggled = {**held, "keys": {**held["keys"], "Space": [0.5]}, "toggle": ["Space"]}
    spec = _spec(DIRECT, source=pendulum, mode="async", controls=toggled)
    assert launch_check.checklist(spec) == []
    breakout = {"kind": "gymnasium", "id": "ALE/Breakout-v5"}
    picks = {"keys": {"Space": 1, "ArrowLeft": 3}, "noop": 0}
    spec = _spec(DIRECT, source=breakout, mode="async", controls=picks)
    assert "step_on_input_off" in _codes(launch_check.checklist(spec))


@pytest.mark.parametrize(
    ("keys", "why"),
    [({}, "no key bindings"), ({f"Digit{i}": 0 for i in range(9)}, "9 key bindings")],
)
def test_touch_without_touch_buttons_warns(keys, why):
    crowd = {**DIRECT, "inputs": ["keyboard", "touch"]}
    controls = {"keys": keys, "buttons": {0: 0}, "noop": 0}
    (item,) = launch_check.checklist(_spec(crowd, controls=controls))
    assert item["code"] == "no_touch_buttons" and why in item["message"]
    assert item["field"] == "environments.0.controls" and item["label"] == "Controls"


def test_a_device_button_gets_no_touch_button():
    crowd = {**DIRECT, "inputs": ["touch"]}
    mouse_only = {"keys": {"MouseLeft": 0, "PhoneGrip": 1}, "noop": 0}
    assert _codes(launch_check.checklist(_spec(crowd, controls=mouse_only)))["no_touch_buttons"]
    keys = {"keys": {"ArrowLeft": 0, "ArrowRight": 1}}
    assert launch_check.checklist(_spec(crowd, controls=keys)) == []


def test_quotas_that_cannot_be_met():
    crowded = _spec(DIRECT, episodes_per_participant=5, episodes_total=3)
    found = _codes(launch_check.checklist(crowded))
    assert found["total_below_per_participant"]["field"] == "environments.0.episodes_total"
    crowd = {**DIRECT, "requirements": {"min_play_time_s": 120}}
    short = _spec(crowd, max_duration_s=30, episodes_per_participant=2)
    (item,) = launch_check.checklist(short)
    assert (item["code"], item["level"]) == ("play_time_unreachable", "error")
    assert item["label"] == "Required play time (s)" and "at most 60 s" in item["message"]
    assert launch_check.checklist(_spec(crowd, max_duration_s=30, episodes_per_participant=4)) == []
    assert launch_check.checklist(_spec(crowd)) == []  # no time limit: any time can be played


def test_validation_problems_and_warnings_become_items():
    unbound = "Action 1 has no key or button: bind one, or tick “not for players” on it"
    reports = [{"name": "CartPole", "problems": [
        {"loc": ["environments", 0, "controls"], "msg": unbound},
        {"loc": ["environments", 0, "source", "kwargs", "size"], "msg": "must be at most 9"},
    ], "warnings": [{"loc": ["environments", 0, "fps"], "msg": "plays at 2× speed"}]}]  # fmt: skip
    items = launch_check.checklist(_spec(DIRECT), reports)
    assert [(i["code"], i["level"], i["label"]) for i in items] == [
        ("unbound_action", "error", "Controls"),
        ("environment_problem", "error", "size"),
        ("environment_warning", "warning", "Steps per second (async)"),
    ]


def test_enforce_refuses_errors_then_asks_about_warnings():
    error = launch_check.item("error", "x", ("name",), "bad")
    warning = launch_check.item("warning", "y", ("name",), "hm")
    with pytest.raises(Invalid) as refused:
        launch_check.enforce([error, warning], acknowledge_warnings=True)
    assert refused.value.detail == [error] and refused.value.code == "not_ready"
    with pytest.raises(Conflict) as asked:
        launch_check.enforce([warning], acknowledge_warnings=False)
    assert asked.value.detail == [warning] and asked.value.code == "unacknowledged_warnings"
    launch_check.enforce([warning], acknowledge_warnings=True)
    launch_check.enforce([], acknowledge_warnings=False)


def test_the_editor_labels_fields_as_the_checklist_does():
    """web/editor/fieldmarks.js words a plain 422 with the same labels the checklist sends:
    the two tables (one per language) must not drift apart."""
    source = (WEB_DIR / "editor" / "fieldmarks.js").read_text(encoding="utf-8")

    def table(name):
        body = re.search(rf"const {name} = \{{(.*?)\n\}};", source, re.S)
        assert body, name
        pairs = re.findall(r'"?([\w.]+)"?: "([^"]+)"', body.group(1))
        return dict(pairs)

    web_study, web_env = table("STUDY_LABELS"), table("ENV_LABELS")
    assert web_study and web_env
    for key, label in web_study.items():
        assert STUDY_LABELS.get(key) == label, key
    for key, label in web_env.items():
        assert ENV_LABELS.get(key) == label, key


def _timed(median: float, **fields: Any) -> dict[str, Any]:
    trial = {
        "id": "planner",
        "steps": 10,
        "median_ms": median,
        "worst_ms": median + 5,
        "budget_ms": 20.0,
        "error": None,
        "failed": False,
        "over_budget": median > 20,
    }
    return {"index": 0, "problems": [], "warnings": [], "policy": {**trial, **fields}}  # fmt: skip


@pytest.mark.parametrize(
    ("env", "median", "fix"),
    [({}, 35.0, "Choose a faster Policy, or have the operator raise "
                "STUDIO_POLICY_STEP_BUDGET_MS above 35 ms."),  # sync: no pace to lower
     ({"mode": "async", "fps": 60}, 35.0, "above 35 ms and lower Steps per second (async) to "
                                          "28, so that each step has time for the policy."),
     ({"mode": "async", "fps": 20}, 35.0, "above 35 ms."),  # 20 steps/s leave 50 ms a step
     ({}, 1500.0, "Choose a faster Policy: the budget cannot be raised past 1000 ms.")],
)  # fmt: skip
def test_a_policy_over_its_budget_warns_with_a_fix_that_fits(env, median, fix):
    spec = _spec(DIRECT, policy={"id": "planner"}, step_on_input=True, **env)
    (item,) = launch_check.checklist(spec, [_timed(median)])
    assert (item["level"], item["code"], item["field"], item["label"]) == (
        "warning",
        "policy_over_budget",
        "environments.0.policy.id",
        "Policy",
    )
    assert item["message"].startswith(f"The policy planner takes {median:.0f} ms a step")
    assert item["fix"].endswith(fix)
    assert launch_check.checklist(spec, [_timed(4.2)]) == []  # within the budget: nothing


def test_a_policy_that_failed_in_validation_blocks():
    spec = _spec(DIRECT, policy={"id": "planner"})
    error = "cannot build policy 'planner': RuntimeError: weights missing"
    failed = _timed(0.0, steps=0, median_ms=None, worst_ms=None, failed=True, error=error)
    (item,) = launch_check.checklist(spec, [failed])
    assert (item["level"], item["code"], item["label"]) == ("error", "policy_failed", "Policy")
    assert item["message"].startswith(f"The policy planner failed in validation: {error}.")


# --- a feedback study: what its participants would judge ---------------------------------
@pytest.fixture
def judged(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    from tests.api.routes.judged import played

    return played(db, factory, settings.data_root, recorded)


def _feedback(study_id: int, **feedback: Any) -> StudySpec:
    from tests.api.routes.judged import feedback_spec

    data = feedback_spec(study_id, **feedback)
    data["crowd"] = {**data["crowd"], "platforms": ["prolific"]}
    return StudySpec.model_validate(data)


def _gold(a: str, b: str, answer: str = "a") -> dict[str, Any]:
    return {"question": "balance", "episodes": [a, b], "answer": answer}


def test_a_feedback_study_over_recorded_episodes_is_ready(judged, db):
    eps = [e.id for e in judged.episodes]
    spec = _feedback(judged.source.id, gold=[_gold(eps[0], eps[1])], gold_rate=0.2)
    assert feedback_check.checklist(db, spec, [], judged.owner.id) == []
    # no environment checks: the crowd's still apply
    no_code = spec.model_copy(
        update={"crowd": spec.crowd.model_copy(update={"completion_code": None})}
    )
    (item,) = feedback_check.checklist(db, no_code, [], judged.owner.id)
    assert item["code"] == "no_completion_code"


def test_a_feedback_source_with_nothing_to_judge_is_an_error(judged, db, factory):
    owner = judged.owner.id
    # filtered to a task no episode drew: nothing to judge, the compare question aside
    nope = _feedback(judged.source.id, source={"studies": [judged.source.id], "task": "nope"})
    none = _codes(feedback_check.checklist(db, nope, [], owner))
    assert list(none) == ["no_source_episodes"]
    assert none["no_source_episodes"]["field"] == "feedback.source.studies"
    assert none["no_source_episodes"]["label"] == "Source studies"
    # one episode: a rate question is fine, a compare question has no pair
    for ep in judged.episodes[1:]:
        ep.excluded = True
    db.commit()
    items = feedback_check.checklist(db, _feedback(judged.source.id), [], owner)
    (item,) = items
    assert (item["code"], item["field"]) == ("nothing_to_compare", "feedback.questions.0")
    assert "Question 1 compares two episodes" in item["message"]
    # another designer's study reads as not found, and its episodes are not counted
    stranger = factory.user()
    found = _codes(feedback_check.checklist(db, _feedback(judged.source.id), [], stranger.id))
    assert found["source_not_found"]["field"] == "feedback.source.studies.0"
    assert "is not one of your studies" in found["source_not_found"]["message"]
    assert "no_source_episodes" in found


def test_gold_items_whose_episodes_are_gone_and_gold_settings_that_do_nothing(judged, db):
    owner = judged.owner.id
    eps = [e.id for e in judged.episodes]
    gone = "0" * 32
    spec = _feedback(judged.source.id, gold=[_gold(eps[0], eps[1]), _gold(eps[2], gone)])
    found = _codes(feedback_check.checklist(db, spec, [], owner))
    item = found.pop("gold_episode_gone")
    assert item["field"] == "feedback.gold.1" and "Gold item 2: episode 00000000" in item["message"]
    assert list(found) == ["gold_never_shown"]  # gold_rate 0 in the helper's spec
    deleted = judged.episodes[3]
    db.delete(deleted)
    db.commit()
    spec = _feedback(judged.source.id, gold=[_gold(eps[0], deleted.id)], gold_rate=0.3)
    assert list(_codes(feedback_check.checklist(db, spec, [], owner))) == ["gold_episode_gone"]
    lone = _feedback(judged.source.id, gold_min_accuracy=0.8)
    (warning,) = feedback_check.checklist(db, lone, [], owner)
    assert (warning["code"], warning["level"]) == ("screening_without_gold", "warning")
    assert warning["label"] == "Minimum gold accuracy"


def test_every_pair_of_too_many_episodes_is_refused_before_launch(judged, db, monkeypatch):
    from server.services.feedback import items as feedback_items

    spec = _feedback(judged.source.id, pairing="all_pairs")
    assert feedback_check.checklist(db, spec, [], judged.owner.id) == []
    monkeypatch.setattr(feedback_items, "MAX_ALL_PAIRS", 5)  # 5 episodes: 10 pairs + 5 ratings
    (item,) = feedback_check.checklist(db, spec, [], judged.owner.id)
    assert item["code"] == "too_many_pairs" and "is 15 items" in item["message"]


def test_touch_pads_or_touch_buttons_play_by_touch():
    crowd = {**DIRECT, "inputs": ["touch"]}
    many = {f"Digit{i}": [1.0] for i in range(9)}
    pads = {"keys": many, "axes": [{"source": "touch", "axis": 0, "dim": 0}]}
    assert "no_touch_buttons" not in _codes(launch_check.checklist(_spec(crowd, controls=pads)))
    button = {"keys": {**many, "TouchA": [1.0]}}
    assert "no_touch_buttons" not in _codes(launch_check.checklist(_spec(crowd, controls=button)))
