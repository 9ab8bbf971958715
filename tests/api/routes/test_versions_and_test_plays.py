"""Test plays are kept out of exports and the review list by default; a change to what
recorded episodes mean is saved as a new version of the study, not in place."""

from __future__ import annotations

import copy

import pytest

from server.models import Study, StudyState
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.api.routes.test_episodes_bulk import run
from tests.api.routes.test_exports import start, wait_done


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A paused study: two participants' CartPole episodes and the designer's test play."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec("Balance"))
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [
        ins.add(study, cp[0], minutes_ago=30),
        ins.add(study, cp[1], participant="worker-2", minutes_ago=20),
        ins.add(study, cp[2], participant=None, user=owner, minutes_ago=10),
    ]
    study.state = StudyState.paused
    db.commit()
    return {"owner": owner, "study": study, "episodes": eps, "client": factory.client(owner)}


def test_exports_leave_test_plays_out_unless_asked(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    default = start(c, sid, {"environments": ["cartpole"]}, archive="folder")
    assert default["episodes_total"] == 2
    assert wait_done(c, default["id"])["state"] == "succeeded"
    every = start(c, sid, {"environments": ["cartpole"], "include_tests": True}, archive="folder")
    assert every["episodes_total"] == 3
    assert wait_done(c, every["id"])["state"] == "succeeded"
    only_tests = {"participants": [f"user:{world['owner'].id}"]}
    res = c.post(f"/api/studies/{sid}/exports", json={"selection": {"include_tests": "x"}})
    assert res.status_code == 422
    job = start(c, sid, only_tests, archive="folder")
    assert job["episodes_total"] == 1
    assert wait_done(c, job["id"])["state"] == "succeeded"


def test_bulk_over_a_filter_leaves_test_plays_alone(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    url = f"/api/studies/{sid}/episodes/bulk"
    body = {"selection": {"filter": {}}, "action": "add_tags", "tags": ["seen"]}
    assert run(c, url, body)["matched"] == 2
    body["selection"] = {"filter": {"include_tests": True}}
    assert run(c, url, body)["matched"] == 3


def _edited(study: Study, **env_fields) -> dict:  # type: ignore[no-untyped-def]
    spec = copy.deepcopy(study.spec)
    spec["environments"][0].update(env_fields)
    return {"spec": spec}


def test_meaning_changes_need_a_new_version(world, db) -> None:  # type: ignore[no-untyped-def]
    c, study = world["client"], world["study"]
    url = f"/api/studies/{study.id}"
    settings = {"sutton_barto_reward": True}
    changes = {
        "source": {"kind": "gymnasium", "id": "CartPole-v1", "kwargs": settings},
        "controls": {"keys": {"KeyA": 0, "KeyD": 1}, "noop": 0},
        "mode": "async",
        "camera": "top",
    }  # fmt: skip
    for field, value in changes.items():
        res = c.put(url, json=_edited(study, **{field: value}))
        assert res.status_code == 409, field
        body = res.json()
        assert body["code"] == "needs_new_version" and "new version" in body["message"]
        # the detail names the field, as other problems do
        assert [p["loc"] for p in body["detail"]] == [["environments", 0, field]]
    # async: fps is the time a step stands for (sync mode has no pace: fps means nothing)
    assert c.put(url, json=_edited(study, fps=25)).status_code == 200
    res = c.put(url, json=_edited(study, mode="async", fps=25))
    assert [p["loc"][-1] for p in res.json()["detail"]] == ["mode"]
    # the same controls as the catalog's, written out: the same meaning, saved in place
    from server.runtime.catalog import CATALOG

    same = CATALOG["CartPole"].controls.model_dump(mode="json")
    assert c.put(url, json=_edited(study, controls=same)).status_code == 200
    # texts, quotas, limits: in place
    in_place = _edited(study, name="Pole", instructions="Go!", episodes_per_participant=4,
                       max_steps=300, seeds=[1, 2])  # fmt: skip
    in_place["spec"]["name"] = "Balance (renamed)"
    res = c.put(url, json=in_place)
    assert res.status_code == 200 and res.json()["name"] == "Balance (renamed)"
    # the environment nobody has played yet can change anything
    spec = copy.deepcopy(in_place["spec"])
    spec["environments"][1]["source"]["kwargs"] = {"goal_velocity": 0.1}
    assert c.put(url, json={"spec": spec}).status_code == 200
    # a YAML file replacing it is held to the same rule
    yaml = c.get(f"{url}/export").text.replace("id: CartPole-v1", "id: Acrobot-v1", 1)
    res = c.put(f"{url}/file", content=yaml, headers={"Content-Type": "application/yaml"})
    assert res.status_code == 409 and res.json()["code"] == "needs_new_version"


def test_a_draft_with_only_test_plays_changes_in_place(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    Inserter(db, settings.data_root).add(study, recorded["cartpole"][0], participant=None,
                                         user=owner)  # fmt: skip
    res = factory.client(owner).put(f"/api/studies/{study.id}", json=_edited(study, fps=20))
    assert res.status_code == 200, res.text


def test_save_as_a_new_version(world, factory, db) -> None:  # type: ignore[no-untyped-def]
    c, study = world["client"], world["study"]
    body = _edited(study, fps=25)
    res = c.post(f"/api/studies/{study.id}/versions", json=body)
    assert res.status_code == 201, res.text
    v2 = res.json()
    assert v2["name"] == "Balance v2" and v2["state"] == "draft"
    assert v2["parent_study_id"] == study.id and v2["parent"]["name"] == "Balance"
    assert v2["spec"]["environments"][0]["fps"] == 25 and v2["spec"]["name"] == "Balance v2"
    # the old study is untouched and lists its version
    old = c.get(f"/api/studies/{study.id}").json()
    assert old["spec"]["environments"][0]["fps"] == 30 and old["state"] == "paused"
    assert [(v["id"], v["name"]) for v in old["versions"]] == [(v2["id"], "Balance v2")]
    # a version of the version is v3
    v3 = c.post(f"/api/studies/{v2['id']}/versions", json={"spec": v2["spec"]}).json()
    assert v3["name"] == "Balance v3" and v3["parent_study_id"] == v2["id"]
    listed = {s["id"]: s for s in c.get("/api/studies").json()}
    assert listed[v3["id"]]["parent"] == {"id": v2["id"], "name": "Balance v2", "state": "draft"}
    # not yours: 404; not allowed environment: 422; no spec: 422
    other = factory.client(factory.user())
    assert other.post(f"/api/studies/{study.id}/versions", json=body).status_code == 404
    bad = _edited(study, source={"kind": "dm_env", "factory": "os:system"})
    assert c.post(f"/api/studies/{study.id}/versions", json=bad).status_code == 422
    assert c.post(f"/api/studies/{study.id}/versions", json={}).status_code == 422
    # deleting a draft that has a version unlinks the version (it stays)
    assert c.delete(f"/api/studies/{v2['id']}").status_code == 204
    orphan = c.get(f"/api/studies/{v3['id']}").json()
    assert orphan["parent_study_id"] is None and orphan["parent"] is None


def test_save_a_study_file_as_a_new_version(world) -> None:  # type: ignore[no-untyped-def]
    c, study = world["client"], world["study"]
    yaml = c.get(f"/api/studies/{study.id}/export").text.replace(
        "id: CartPole-v1", "id: Acrobot-v1"
    )
    res = c.post(f"/api/studies/{study.id}/versions/file", content=yaml,
                 headers={"Content-Type": "application/yaml"})  # fmt: skip
    assert res.status_code == 201, res.text
    assert res.json()["name"] == "Balance v2"
    assert res.json()["spec"]["environments"][0]["source"]["id"] == "Acrobot-v1"
    res = c.post(f"/api/studies/{study.id}/versions/file", content="name: [",
                 headers={"Content-Type": "application/yaml"})  # fmt: skip
    assert res.status_code == 422


def test_defaults_written_out_are_the_same_meaning(world, db) -> None:  # type: ignore[no-untyped-def]
    """Studies store only the values set; a save writing the defaults out changes nothing."""
    c, study = world["client"], world["study"]
    stored = study.spec["environments"][0]
    assert "mode" not in stored and "controls" not in stored and "kwargs" not in stored["source"]
    from server.runtime.catalog import CATALOG

    explicit = _edited(
        study,
        mode="sync",
        fps=30,
        camera=None,
        source={"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {}},
        controls=CATALOG["CartPole"].controls.model_dump(mode="json"),
    )
    res = c.put(f"/api/studies/{study.id}", json=explicit)
    assert res.status_code == 200, res.text
    # and a real change after that still needs a new version
    res = c.put(f"/api/studies/{study.id}", json=_edited(study, mode="async"))
    assert res.status_code == 409 and res.json()["code"] == "needs_new_version"


def test_a_setting_left_to_its_schema_default_is_the_same_meaning() -> None:
    from server.services.studies.study_versions import meaning_changes
    from server.study_spec import StudySpec

    def spec(kwargs: dict) -> StudySpec:  # type: ignore[type-arg]
        env = {"id": "pong", "name": "Pong", "source": {"kind": "gymnasium", "id": "ALE/Pong-v5"}}
        env["source"]["kwargs"] = kwargs  # type: ignore[index]
        return StudySpec.model_validate({"name": "S", "environments": [env]})

    unset = spec({})
    assert meaning_changes(unset, spec({"repeat_action_probability": 0.25})) == []
    changed = meaning_changes(unset, spec({"repeat_action_probability": 0.0}))
    assert [c["loc"] for c in changed] == [["environments", 0, "source"]]
