"""The pre-launch checklist through the API: GET /checklist, Validate's checklist, and
activation refused on errors (422) and asked about warnings (409) until acknowledged."""

from __future__ import annotations

import pytest

from server.models import Study, StudyState
from tests.factories import spec_dict
from tests.player.conftest import counter_env, spec
from tests.runtime.fake_policies import ALLOWED as POLICIES


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    """The fake shared-autonomy policies allowed, with a budget of 50 ms a step."""
    return settings.model_copy(update={"policies": POLICIES, "policy_step_budget_ms": 50})


@pytest.fixture
def owner(factory):
    return factory.user()


@pytest.fixture
def client(factory, owner):
    return factory.client(owner)


def _prolific(**crowd):
    return {**spec_dict("On Prolific"), "crowd": {"platforms": ["prolific"], **crowd}}


def _activate(client, study_id: int, **extra):
    return client.post(f"/api/studies/{study_id}/state", json={"state": "active", **extra})


def test_a_prolific_study_without_a_code_cannot_activate_until_it_has_one(
    client, factory, owner, db
):
    study = factory.study(owner, _prolific(screenout_code="NOPE"))
    res = client.get(f"/api/studies/{study.id}/checklist")
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["ready"] is False
    (item,) = body["items"]
    assert item["level"] == "error" and item["code"] == "no_completion_code"
    assert (item["field"], item["label"]) == ("crowd.completion_code", "Completion code")
    assert item["fix"] and "Prolific" in item["message"]

    # acknowledging warnings does not get past an error
    res = _activate(client, study.id, acknowledge_warnings=True)
    assert res.status_code == 422, res.text
    assert res.json()["code"] == "not_ready"
    assert res.json()["message"] == "The study cannot start yet: 1 thing to fix first."
    assert [i["field"] for i in res.json()["detail"]] == ["crowd.completion_code"]
    db.expire_all()
    assert db.get(Study, study.id).state == StudyState.draft
    assert db.get(Study, study.id).permalink_token is None

    spec = _prolific(screenout_code="NOPE", completion_code="C0MPLETE")
    assert client.put(f"/api/studies/{study.id}", json={"spec": spec}).status_code == 200
    assert client.get(f"/api/studies/{study.id}/checklist").json() == {"ready": True, "items": []}
    res = _activate(client, study.id)
    assert res.status_code == 200, res.text
    assert res.json()["state"] == "active" and res.json()["permalink_token"]


def test_warnings_are_asked_once_per_activation(client, factory, owner, db):
    breakout = {"kind": "gymnasium", "id": "ALE/Breakout-v5"}
    spec = {**spec_dict("Taps", source=breakout, mode="async", fps=15),
            "crowd": {"platforms": ["direct"]}}  # fmt: skip
    study = factory.study(owner, spec)
    body = client.get(f"/api/studies/{study.id}/checklist").json()
    assert body["ready"] is True
    assert [i["code"] for i in body["items"]] == ["step_on_input_off"]

    res = _activate(client, study.id)
    assert res.status_code == 409, res.text
    assert res.json()["code"] == "unacknowledged_warnings"
    assert [i["field"] for i in res.json()["detail"]] == ["environments.0.step_on_input"]
    db.expire_all()
    assert db.get(Study, study.id).state == StudyState.draft

    res = _activate(client, study.id, acknowledge_warnings=True)
    assert res.status_code == 200, res.text
    assert res.json()["state"] == "active"


def test_an_unbound_action_is_a_checklist_error_at_the_controls(client, factory, owner):
    spec = {**spec_dict("Half bound", controls={"keys": {"ArrowLeft": 0}}),
            "crowd": {"platforms": ["direct"]}}  # fmt: skip
    study = factory.study(owner, spec)
    (item,) = client.get(f"/api/studies/{study.id}/checklist").json()["items"]
    assert (item["code"], item["field"], item["label"]) == (
        "unbound_action", "environments.0.controls", "Controls",
    )  # fmt: skip
    assert item["message"] == (
        "Action 1 has no key or button: bind one, or tick “not for players” on it"
    )


def test_validate_carries_the_checklist_of_the_unsaved_spec(client):
    res = client.post("/api/studies/validate", json={"spec": _prolific()})
    assert res.status_code == 200, res.text
    codes = [i["code"] for i in res.json()["checklist"]]
    assert codes == ["no_completion_code", "no_screenout_code"]


def test_checklist_of_someone_elses_study_is_404(factory, owner):
    study = factory.study(owner, _prolific())
    stranger = factory.client(factory.user())
    assert stranger.get(f"/api/studies/{study.id}/checklist").status_code == 404
    assert factory.client().get(f"/api/studies/{study.id}/checklist").status_code == 401


@pytest.mark.parametrize("flag", ["yes", 1.5, None, [True]])
def test_a_bad_acknowledgement_is_422_not_500(client, factory, owner, flag):
    study = factory.study(owner, _prolific(completion_code="C0DE"))
    res = _activate(client, study.id, acknowledge_warnings=flag)
    assert res.status_code == 422, res.text
    assert res.json()["detail"][0]["loc"][-1] == "acknowledge_warnings"


@pytest.mark.parametrize(
    ("policy_id", "level", "code", "status"),
    [("slow-always", "warning", "policy_over_budget", 409),
     ("fails-fourth", "error", "policy_failed", 422)],
)  # fmt: skip
def test_a_policy_timed_by_validate_is_on_the_checklist(client, factory, owner, policy_id,
                                                        level, code, status):  # fmt: skip
    env = {**counter_env(mode="sync"), "policy": {"id": policy_id}}
    study = factory.study(owner, {**spec(env), "crowd": {"platforms": ["direct"]}})
    res = client.post(f"/api/studies/{study.id}/validate")
    assert res.status_code == 200, res.text
    timing = res.json()["environments"][0]["policy"]
    assert timing["id"] == policy_id and timing["budget_ms"] == 50
    assert timing["over_budget"] is (code == "policy_over_budget")
    assert timing["failed"] is (code == "policy_failed")
    (item,) = client.get(f"/api/studies/{study.id}/checklist").json()["items"]
    assert (item["level"], item["code"], item["field"], item["label"]) == (
        level, code, "environments.0.policy.id", "Policy"
    )  # fmt: skip
    assert item["message"].startswith(f"The policy {policy_id} ")
    res = _activate(client, study.id)
    assert res.status_code == status, res.text
    assert [i["code"] for i in res.json()["detail"]] == [code]


def test_an_environment_that_does_not_replay_is_a_checklist_warning_naming_the_difference(
    client, factory, owner
):
    source = {"kind": "dm_env", "factory": "tests.runtime.fake_envs:unseeded", "kwargs": {}}
    noisy = {**counter_env("noisy"), "source": source}
    study = factory.study(owner, {**spec(counter_env(), noisy), "crowd": {"platforms": ["direct"]}})
    res = client.post(f"/api/studies/{study.id}/validate")
    assert res.status_code == 200, res.text
    steady, unseeded = (env["replay"] for env in res.json()["environments"])
    assert steady["replays"] is True and steady["steps"] == 5 and steady["difference"] is None
    assert unseeded["replays"] is False and unseeded["declared"] is False
    assert (unseeded["difference"]["step"], unseeded["difference"]["field"]) == (1, "reward")
    (item,) = client.get(f"/api/studies/{study.id}/checklist").json()["items"]
    assert (item["level"], item["code"], item["field"]) == (
        "warning", "not_replayable", "environments.1.source"
    )  # fmt: skip
    assert "does not replay" in item["message"] and "step 1, reward" in item["message"]
    assert item["fix"].startswith("Seed the environment's randomness")
    res = _activate(client, study.id)
    assert res.status_code == 409 and [i["code"] for i in res.json()["detail"]] == [
        "not_replayable"
    ]
    assert _activate(client, study.id, acknowledge_warnings=True).status_code == 200
