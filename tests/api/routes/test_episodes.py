"""The episodes API: authorization, filters, tags and step tags, notes, replay of real logs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from server.models import Role, utcnow
from tests.api.routes.recorded import Inserter, two_env_spec


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A designer's two-environment study with five episodes of varied status and tags."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [
        ins.add(study, cp[0], tags=("good",), minutes_ago=50),
        ins.add(study, cp[1], status="abandoned", participant="worker-2", minutes_ago=40),
        ins.add(study, cp[2], tags=("good", "weird"), minutes_ago=30),
        ins.add(study, cp[3], status="rejected", participant=None, user=owner, minutes_ago=20),
        ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=10),
    ]
    return {"owner": owner, "study": study, "episodes": eps, "client": factory.client(owner)}


def _ids(res) -> list[str]:  # type: ignore[no-untyped-def]
    assert res.status_code == 200, res.text
    return [e["id"] for e in res.json()["items"]]


def test_authorization(world, factory, client) -> None:  # type: ignore[no-untyped-def]
    study, ep = world["study"], world["episodes"][0]
    urls = [
        f"/api/studies/{study.id}/episodes",
        f"/api/episodes/{ep.id}",
        f"/api/episodes/{ep.id}/frames/0",
        f"/api/episodes/{ep.id}/steps",
        f"/api/episodes/{ep.id}/notes",
    ]
    other = factory.client(factory.user())
    admin = factory.client(factory.user(Role.admin))
    for url in urls:
        assert client.get(url).status_code == 401, url
        assert other.get(url).status_code == 404, url
        assert admin.get(url).status_code == 200, url
        assert world["client"].get(url).status_code == 200, url
    res = other.post(f"/api/episodes/{ep.id}/tags", json={"name": "x"})
    assert res.status_code == 404
    assert world["client"].get("/api/episodes/nope").status_code == 404


def test_list_and_filters(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    ids = [e.id for e in world["episodes"]]
    url = f"/api/studies/{sid}/episodes"
    every = {"include_tests": "true"}  # the designer's test play (ids[3]) included
    res = c.get(url, params=every)
    body = res.json()
    assert _ids(res) == ids[::-1]  # newest first by default
    assert body["total"] == 5 and body["tag_names"] == ["good", "weird"]
    assert [e["is_test"] for e in body["items"]] == [False, True, False, False, False]
    first = body["items"][-1]
    assert first["participant"] == "worker-1" and first["tags"] == ["good"]
    assert first["steps"] == world["episodes"][0].steps
    # by default the test play is left out
    default = c.get(url)
    assert _ids(default) == [ids[4], ids[2], ids[1], ids[0]] and default.json()["total"] == 4
    assert _ids(c.get(url, params={"status": ["completed"]})) == [ids[4], ids[2], ids[0]]
    assert _ids(c.get(url, params={"status": ["abandoned", "rejected"]})) == [ids[1]]
    rejected = {"status": ["abandoned", "rejected"], **every}
    assert _ids(c.get(url, params=rejected)) == [ids[3], ids[1]]
    assert _ids(c.get(url, params={"env": "mountaincar"})) == [ids[4]]
    assert _ids(c.get(url, params={"participant": "worker-2"})) == [ids[1]]
    owner_key = f"user:{world['owner'].id}"  # naming a designer asks for their test plays
    assert _ids(c.get(url, params={"participant": owner_key})) == [ids[3]]
    assert _ids(c.get(url, params={"tag": "good"})) == [ids[2], ids[0]]
    assert _ids(c.get(url, params={"tag": ["good", "weird"]})) == [ids[2]]
    assert _ids(c.get(url, params={"tag": "good", "exclude_tag": "weird"})) == [ids[0]]
    since = (utcnow() - timedelta(minutes=35)).isoformat()
    until = (utcnow() - timedelta(minutes=15)).isoformat()
    assert _ids(c.get(url, params={"since": since, "until": until, **every})) == [ids[3], ids[2]]
    assert _ids(c.get(url, params={"since": since, "until": until})) == [ids[2]]
    page = c.get(url, params={"sort": "started_at", "offset": 1, "limit": 2, **every})
    assert _ids(page) == ids[1:3] and page.json()["total"] == 5
    assert _ids(c.get(url, params={"sort": "-steps"}))[0] == ids[1]  # 12-step limit: longest
    assert c.get(url, params={"sort": "bogus"}).status_code == 422
    assert c.get(url, params={"status": "sleeping"}).status_code == 422
    assert c.get(url, params={"include_tests": "maybe"}).status_code == 422


def test_episode_tags(world) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][1]
    res = c.post(f"/api/episodes/{ep.id}/tags", json={"name": "check me"})
    assert res.status_code == 201 and res.json()["tags"] == ["check me"]
    assert c.post(f"/api/episodes/{ep.id}/tags", json={"name": "check me"}).json()["tags"] == [
        "check me"
    ]
    assert c.post(f"/api/episodes/{ep.id}/tags", json={"name": "a,b"}).status_code == 422
    assert c.post(f"/api/episodes/{ep.id}/tags", json={"name": ""}).status_code == 422
    assert c.delete(f"/api/episodes/{ep.id}/tags/check me").status_code == 204
    assert c.get(f"/api/episodes/{ep.id}").json()["tags"] == []
    assert c.delete(f"/api/episodes/{ep.id}/tags/check me").status_code == 404


def test_writes_need_csrf(world, factory) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][0]
    res = c.post(f"/api/episodes/{ep.id}/tags", json={"name": "x"}, headers={"X-CSRF-Token": "no"})
    assert res.status_code == 403


def test_step_tags_validated_against_steps(world) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][0]
    last = ep.steps - 1
    url = f"/api/episodes/{ep.id}/step-tags"
    one = c.post(url, json={"name": "crash", "start": last})
    assert one.status_code == 201 and one.json()["end"] == last
    rng = c.post(url, json={"name": "wobble", "start": 1, "end": 3})
    assert rng.status_code == 201
    for bad in (
        {"name": "x", "start": last + 1},
        {"name": "x", "start": 2, "end": last + 1},
        {"name": "x", "start": 3, "end": 2},
        {"name": "x", "start": -1},
    ):
        assert c.post(url, json=bad).status_code == 422, bad
    detail = c.get(f"/api/episodes/{ep.id}").json()
    assert [(t["name"], t["start"], t["end"]) for t in detail["step_tags"]] == [
        ("wobble", 1, 3),
        ("crash", last, last),
    ]
    assert c.delete(f"{url}/{rng.json()['id']}").status_code == 204
    assert c.delete(f"{url}/{rng.json()['id']}").status_code == 404
    assert len(c.get(f"/api/episodes/{ep.id}").json()["step_tags"]) == 1
    assert "crash" in c.get(f"/api/studies/{world['study'].id}/episodes").json()["tag_names"]


def test_notes(world) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][0]
    url = f"/api/episodes/{ep.id}/notes"
    assert c.post(url, json={"body": "first"}).status_code == 201
    assert c.post(url, json={"body": "  second  "}).json()["body"] == "second"
    assert c.post(url, json={"body": "   "}).status_code == 422
    assert [n["body"] for n in c.get(url).json()] == ["first", "second"]
    notes = c.get(f"/api/episodes/{ep.id}").json()["notes"]
    assert notes[0]["author_id"] == world["owner"].id


def test_no_status_change(world) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][1]
    res = c.put(f"/api/episodes/{ep.id}", json={"status": "completed"})
    assert res.status_code == 405
    # PATCH sets the reviewer's outcome and the excluded mark only: a status is refused
    res = c.patch(f"/api/episodes/{ep.id}", json={"status": "completed"})
    assert res.status_code == 422
    assert c.get(f"/api/episodes/{ep.id}").json()["status"] == "abandoned"


def test_frames_are_the_recorded_jpegs(world, recorded) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][0]
    rec = recorded["cartpole"][0]
    for step in (0, 3, rec.num_steps - 1, 3):  # 3 twice: served from the cached reader
        res = c.get(f"/api/episodes/{ep.id}/frames/{step}")
        assert res.status_code == 200
        assert res.headers["content-type"] == "image/jpeg"
        assert res.content == rec.frames[step]
    assert c.get(f"/api/episodes/{ep.id}/frames/{rec.num_steps}").status_code == 404


def test_steps_summary_is_realigned(world, recorded) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["episodes"][0]
    rec = recorded["cartpole"][0]
    body = c.get(f"/api/episodes/{ep.id}/steps", params={"start": 0, "limit": 1000}).json()
    assert body["total"] == rec.num_steps
    items = body["items"]
    assert [i["action"] for i in items[:-1]] == [int(a) for a in rec.actions]
    assert [i["reward"] for i in items[:-1]] == rec.rewards
    assert items[-1]["is_last"] and items[-1]["reward"] == 0.0 and items[-1]["action"] is None
    assert items[0]["is_first"] and not items[1]["is_first"]
    page = c.get(f"/api/episodes/{ep.id}/steps", params={"start": 2, "limit": 2}).json()
    assert [i["step"] for i in page["items"]] == [2, 3]
    assert c.get(f"/api/episodes/{ep.id}/steps", params={"limit": 0}).status_code == 422


def test_log_outside_data_root_is_refused(world, db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ep = world["episodes"][0]
    ep.storage_path = str(tmp_path.parent)
    db.commit()
    res = world["client"].get(f"/api/episodes/{ep.id}/frames/0")
    assert res.status_code == 400
    assert "data root" in res.json()["detail"]


# --- found by tests/test_api_fuzz.py --------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [f"offset={2**31}", f"offset={2**70}", "env=%00", "tag=a%00b", "sort=%00"],
)
def test_query_the_database_cannot_hold_is_422(query: str, world) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].get(f"/api/studies/{world['study'].id}/episodes?{query}")
    assert res.status_code == 422, res.text
    assert "detail" in res.json()


@pytest.mark.parametrize("who", [f"user:{2**70}", "user:²", "user:-1"])
def test_participant_filter_with_impossible_user_id_matches_nothing(who: str, world) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].get(
        f"/api/studies/{world['study'].id}/episodes", params={"participant": who}
    )
    assert _ids(res) == []


def test_nul_in_episode_id_and_bodies_is_422(world) -> None:  # type: ignore[no-untyped-def]
    client, ep = world["client"], world["episodes"][0]
    assert client.get("/api/episodes/%00").status_code == 422
    assert client.post(f"/api/episodes/{ep.id}/notes", json={"body": "a\x00b"}).status_code == 422
    assert client.post(f"/api/episodes/{ep.id}/tags", json={"name": "a\x00"}).status_code == 422
    assert client.delete(f"/api/episodes/{ep.id}/step-tags/{2**40}").status_code == 422
