"""Narrations over real recorded episodes: a reviewer's list, add, edit and delete with the
version read (two reviewers at once: the second is refused, nothing lost), the bounds of the
text and the steps, a deleted episode, who may, the study's JSON export and import; and the
participant's own narration form (X-Play-Ticket)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from server.errors import Invalid, NotFound
from server.models import Episode, Narration, Role
from server.services.review import narrations
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.api.routes.test_episodes_bulk import run
from tests.player.conftest import activate


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """An active study asking for narration: two completed CartPole episodes of worker-1, one
    of worker-2, and one of worker-1 still recording; the owner's client."""
    owner = factory.user()
    spec = {**two_env_spec(), "narrate_episodes": True}
    study = activate(db, factory.study(owner, spec))
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    mine = [ins.add(study, cp[0], minutes_ago=30), ins.add(study, cp[1], minutes_ago=20)]
    theirs = ins.add(study, cp[2], participant="worker-2", minutes_ago=10)
    running = ins.add(study, cp[3], status="recording", minutes_ago=1)
    mine[0].instruction = "Pick up the red cube"
    db.commit()
    return {"owner": owner, "study": study, "c": factory.client(owner), "mine": mine,
            "theirs": theirs, "running": running}  # fmt: skip


def _url(episode: Episode, nid: int | None = None) -> str:
    base = f"/api/episodes/{episode.id}/narrations"
    return base if nid is None else f"{base}/{nid}"


def _add(c, episode: Episode, start: int, end: int, text: str) -> dict:  # type: ignore[no-untyped-def]
    res = c.post(_url(episode), json={"start_step": start, "end_step": end, "text": text})
    assert res.status_code == 201, res.text
    return res.json()


def _loc(res) -> list:  # type: ignore[no-untyped-def]
    """The first problem's field path of a 422."""
    assert res.status_code == 422, res.text
    return res.json()["detail"][0]["loc"]


def test_add_list_edit_delete_with_versions(world, db) -> None:  # type: ignore[no-untyped-def]
    c, ep, owner = world["c"], world["mine"][0], world["owner"]
    assert ep.steps == 9  # 8 actions: RLDS steps 0..8
    late = _add(c, ep, 5, ep.steps - 1, "  lift it  ")
    grasp = _add(c, ep, 1, 4, "grasp the can")
    assert late["text"] == "lift it"  # stripped
    assert (grasp["author"], grasp["author_id"], grasp["by_participant"]) == (
        owner.email, owner.id, False)  # fmt: skip
    assert grasp["version"] == 1 and grasp["episode_id"] == ep.id
    listed = c.get(_url(ep)).json()
    assert [(n["start_step"], n["end_step"], n["text"]) for n in listed] == [
        (1, 4, "grasp the can"), (5, 8, "lift it")]  # fmt: skip

    # two reviewers read version 1; the first edits, the second's edit and delete are refused
    first = c.patch(_url(ep, grasp["id"]), json={"text": "grasp the red can", "version": 1})
    assert first.status_code == 200, first.text
    assert (first.json()["text"], first.json()["version"]) == ("grasp the red can", 2)
    second = c.patch(_url(ep, grasp["id"]), json={"end_step": 3, "version": 1})
    assert second.status_code == 409, second.text
    body = second.json()
    assert body["code"] == "version_conflict" and "someone else" in body["message"]
    assert body["detail"]["current"]["text"] == "grasp the red can"
    assert body["detail"]["current"]["version"] == 2
    assert c.delete(_url(ep, grasp["id"]), params={"version": 1}).status_code == 409
    db.expire_all()
    row = db.get(Narration, grasp["id"])
    assert (row.text, row.end_step, row.version) == ("grasp the red can", 4, 2)  # nothing lost

    # the steps move (version 2 read), then it is deleted at version 3
    moved = c.patch(_url(ep, grasp["id"]), json={"start_step": 0, "end_step": 2, "version": 2})
    assert moved.status_code == 200, moved.text
    assert (moved.json()["start_step"], moved.json()["end_step"], moved.json()["version"]) == (
        0, 2, 3)  # fmt: skip
    assert c.delete(_url(ep, grasp["id"]), params={"version": 3}).status_code == 204
    assert [n["text"] for n in c.get(_url(ep)).json()] == ["lift it"]
    # gone: 404 for an edit or a deletion, whatever the version
    gone = c.patch(_url(ep, grasp["id"]), json={"text": "x", "version": 3})
    assert gone.status_code == 404 and "no such narration" in gone.json()["detail"]
    assert c.delete(_url(ep, grasp["id"]), params={"version": 3}).status_code == 404
    # another episode's narration is not this one's
    other = world["mine"][1]
    assert c.patch(_url(other, late["id"]), json={"text": "x", "version": 1}).status_code == 404


def test_text_and_steps_are_bounded(world) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["c"], world["mine"][0]
    last = ep.steps - 1

    def post(**body):  # type: ignore[no-untyped-def]
        return c.post(_url(ep), json={"start_step": 0, "end_step": 1, "text": "ok", **body})

    assert _loc(post(text="   ")) == ["body", "text"]
    assert _loc(post(text="")) == ["body", "text"]
    assert _loc(post(text="x" * 1001)) == ["body", "text"]
    assert _loc(post(text="bell \x07 rings")) == ["body", "text"]
    assert "U+0007" in post(text="bell \x07").json()["message"]
    assert _loc(post(text="nul \x00")) == ["body", "text"]
    assert post(text=f"  {'x' * 1000}  ").status_code == 201  # 1000 once stripped
    assert _loc(post(start_step=3, end_step=2)) == ["body", "end_step"]
    assert _loc(post(end_step=last + 1)) == ["body", "end_step"]
    res = post(start_step=last + 1, end_step=last + 1)
    assert _loc(res) == ["body", "start_step"]
    assert f"0..{last}" in res.json()["message"]
    assert _loc(post(start_step=-1)) == ["body", "start_step"]
    assert _loc(post(end_step=2**40)) == ["body", "end_step"]
    assert _loc(post(extra=1)) == ["body", "extra"]
    assert post(start_step=last, end_step=last).status_code == 201

    n = post(start_step=2, end_step=5).json()
    # an edit of one end is checked against the other one, naming the field it changed
    assert _loc(c.patch(_url(ep, n["id"]), json={"end_step": 1, "version": 1})) == [
        "body", "end_step"]  # fmt: skip
    assert _loc(c.patch(_url(ep, n["id"]), json={"start_step": 6, "version": 1})) == [
        "body", "start_step"]  # fmt: skip
    assert _loc(c.patch(_url(ep, n["id"]), json={"text": " ", "version": 1})) == ["body", "text"]
    assert c.patch(_url(ep, n["id"]), json={"version": 1}).status_code == 422  # nothing to change
    assert c.delete(_url(ep, n["id"])).status_code == 422  # no version
    assert c.get(_url(ep)).json()[-2]["version"] == 1  # none of them changed it


def test_a_deleted_episode_takes_its_narrations_and_is_404(world, db, engine) -> None:  # type: ignore[no-untyped-def]
    c, ep, study = world["c"], world["mine"][0], world["study"]
    n = _add(c, ep, 0, 1, "start")
    url, ep_id = _url(ep), ep.id
    bulk = {"selection": {"episode_ids": [ep_id]}, "action": "delete"}
    assert run(c, f"/api/studies/{study.id}/episodes/bulk", bulk)["changed"] == 1
    db.expire_all()
    assert db.scalars(select(Narration).where(Narration.episode_id == ep_id)).all() == []
    assert c.get(url).status_code == 404
    assert c.post(url, json={"start_step": 0, "end_step": 0, "text": "x"}).status_code == 404
    assert c.patch(f"{url}/{n['id']}", json={"text": "x", "version": 1}).status_code == 404
    assert c.delete(f"{url}/{n['id']}", params={"version": 1}).status_code == 404

    # deleted between the read of the episode and the write of the narration: 404, not a 500
    other = world["mine"][1]
    held = db.get(Episode, other.id)
    assert held is not None and held.steps > 2
    with engine.begin() as conn:
        conn.execute(Episode.__table__.delete().where(Episode.__table__.c.id == other.id))
    with pytest.raises(NotFound, match="deleted meanwhile"):
        narrations.add(db, held, 0, 1, "too late")


def test_only_who_manages_the_study(world, factory) -> None:  # type: ignore[no-untyped-def]
    ep, study = world["mine"][0], world["study"]
    n = _add(world["c"], ep, 0, 2, "mine")
    stranger = factory.client(factory.user())
    for res in (
        stranger.get(_url(ep)),
        stranger.post(_url(ep), json={"start_step": 0, "end_step": 0, "text": "x"}),
        stranger.patch(_url(ep, n["id"]), json={"text": "x", "version": 1}),
        stranger.delete(_url(ep, n["id"]), params={"version": 1}),
        stranger.get(f"/api/studies/{study.id}/narrations"),
        stranger.post(f"/api/studies/{study.id}/narrations/import", json=[]),
    ):
        assert res.status_code == 404, res.text
    assert factory.client().get(_url(ep)).status_code == 401
    admin = factory.client(factory.user(Role.admin))
    edited = admin.patch(_url(ep, n["id"]), json={"text": "the admin's", "version": 1})
    assert edited.status_code == 200 and edited.json()["author"] == world["owner"].email
    assert [x["text"] for x in world["c"].get(_url(ep)).json()] == ["the admin's"]


def test_export_and_import_round_trip(world, db, factory, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    c, study, (a, b) = world["c"], world["study"], world["mine"]
    _add(c, a, 0, 3, "reach")
    _add(c, a, 4, 6, "grasp the can")
    _add(c, b, 2, 2, "drop «it»")
    res = c.get(f"/api/studies/{study.id}/narrations")
    assert res.status_code == 200 and res.headers["content-type"].startswith("application/json")
    assert res.headers["content-disposition"] == (
        f'attachment; filename="narrations-study-{study.id}.json"')  # fmt: skip
    exported = res.json()
    assert {(r["episode_id"], r["start_step"], r["end_step"], r["text"]) for r in exported} == {
        (a.id, 0, 3, "reach"), (a.id, 4, 6, "grasp the can"), (b.id, 2, 2, "drop «it»"),
    }  # fmt: skip
    assert set(exported[0]) == {"episode_id", "start_step", "end_step", "text", "author",
                                "by_participant", "created_at", "updated_at"}  # fmt: skip
    assert all(r["author"] == world["owner"].email and not r["by_participant"] for r in exported)
    url = f"/api/studies/{study.id}/narrations/import"

    # the same file again: every row is there already, nothing doubles
    again = c.post(url, json=exported)
    assert again.status_code == 200, again.text
    assert again.json() == {"imported": 0, "skipped": 3}
    # all gone, then imported back: the same rows, timestamps and authors
    db.execute(Narration.__table__.delete())
    db.commit()
    back = c.post(url, json=exported + [exported[0]])  # a row twice in one file: once
    assert back.json() == {"imported": 3, "skipped": 1}
    assert c.get(f"/api/studies/{study.id}/narrations").json() == exported

    # all or nothing: bad rows are named by index and field, and nothing is added
    other_study = factory.study(world["owner"], two_env_spec("Other"))
    foreign = Inserter(db, settings.data_root).add(other_study, recorded["cartpole"][4])
    bad = [
        {**exported[0], "text": "fine"},
        {**exported[0], "episode_id": foreign.id},
        {**exported[0], "end_step": a.steps},
        {**exported[0], "text": "  "},
    ]
    res = c.post(url, json=bad)
    assert res.status_code == 422, res.text
    assert [d["loc"] for d in res.json()["detail"]] == [
        ["body", 1, "episode_id"], ["body", 2, "end_step"], ["body", 3, "text"]]  # fmt: skip
    assert res.json()["message"].startswith("Nothing was imported: row 1, episode_id")
    assert len(c.get(f"/api/studies/{study.id}/narrations").json()) == 3
    assert _loc(c.post(url, json=[{**exported[0], "version": 4}])) == ["body", 0, "version"]
    early = {**exported[0], "text": "new", "created_at": "0001-01-01T00:00:00+05:00"}
    assert _loc(c.post(url, json=[early])) == ["body", 0, "created_at"]  # before year 1 in UTC
    assert _loc(c.post(url, json={"rows": exported})) == ["body"]
    small = {"episode_id": a.id, "start_step": 0, "end_step": 0, "text": "a"}
    # the count is bounded (10,000 rows), and so is the body (a larger one is a 413)
    too_many = [narrations.ImportRow(**small)] * (narrations.MAX_IMPORT + 1)
    with pytest.raises(Invalid, match="at most 10000"):
        narrations.import_rows(db, study, too_many, world["owner"].id)
    assert c.post(url, json=[small] * 5000).status_code == 413
    # an unknown author is the importer; the narration is in the importer's name then
    alien = c.post(url, json=[{**small, "text": "by a stranger", "author": "who@else.org"}])
    assert alien.json() == {"imported": 1, "skipped": 0}
    row = db.scalars(select(Narration).where(Narration.text == "by a stranger")).one()
    assert row.author_id == world["owner"].id


def _ticket(factory, study, who: str) -> str:  # type: ignore[no-untyped-def]
    res = factory.client().post(
        "/api/play/join", json={"token": study.permalink_token, "participant_id": who}
    )
    assert res.status_code == 200, res.text
    return res.json()["ticket"]


def test_a_participant_narrates_their_own_saved_episode(world, factory, db) -> None:  # type: ignore[no-untyped-def]
    study, (ep, _), theirs = world["study"], world["mine"], world["theirs"]
    play = factory.client()
    play.headers["X-Play-Ticket"] = _ticket(factory, study, "worker-1")
    base = f"/api/play/episodes/{ep.id}"
    form = play.get(f"{base}/narration")
    assert form.status_code == 200, form.text
    assert form.json() == {"episode_id": ep.id, "steps": ep.steps,
                           "instruction": "Pick up the red cube", "narrations": []}  # fmt: skip
    frame = play.get(f"{base}/frames/{ep.steps - 1}")
    assert frame.status_code == 200 and frame.headers["content-type"] == "image/jpeg"
    assert frame.content[:2] == b"\xff\xd8"
    assert play.get(f"{base}/frames/{ep.steps}").status_code == 404

    body = {"start_step": 0, "end_step": 4, "text": " I reach "}
    res = play.post(f"{base}/narrations", json=body)
    assert res.status_code == 201, res.text
    mine = res.json()
    assert (mine["text"], mine["by_participant"], mine["author_id"], mine["author"]) == (
        "I reach", True, None, None)  # fmt: skip
    row = db.get(Narration, mine["id"])
    assert row.participant_id == ep.participant_id and row.author_id is None
    assert _loc(play.post(f"{base}/narrations",
                          json={"start_step": 0, "end_step": ep.steps, "text": "x"})) == [
        "body", "end_step"]  # fmt: skip
    # the reviewer's narrations are not in the participant's list; theirs is in the reviewer's
    _add(world["c"], ep, 1, 1, "the reviewer's")
    assert [n["text"] for n in play.get(f"{base}/narration").json()["narrations"]] == ["I reach"]
    by = {n["text"]: n["by_participant"] for n in world["c"].get(_url(ep)).json()}
    assert by == {"I reach": True, "the reviewer's": False}

    # another participant's episode, or none: 404 on every endpoint; no ticket: 401
    for path in (f"/api/play/episodes/{theirs.id}", "/api/play/episodes/nope"):
        assert play.get(f"{path}/narration").status_code == 404
        assert play.get(f"{path}/frames/0").status_code == 404
        res = play.post(f"{path}/narrations", json={"start_step": 0, "end_step": 0, "text": "x"})
        assert res.status_code == 404
    assert factory.client().get(f"{base}/narration").status_code == 401
    # not saved yet: 409 saying so
    res = play.get(f"/api/play/episodes/{world['running'].id}/narration")
    assert res.status_code == 409 and res.json()["code"] == "episode_not_completed"

    # at most 50 each
    for i in range(narrations.MAX_BY_PARTICIPANT - 1):
        ok = play.post(f"{base}/narrations", json={"start_step": 0, "end_step": 0, "text": f"{i}"})
        assert ok.status_code == 201, ok.text
    res = play.post(f"{base}/narrations", json={"start_step": 0, "end_step": 0, "text": "51st"})
    assert res.status_code == 409 and res.json()["code"] == "too_many_narrations"

    # a study that does not ask for narration: 409
    world["study"].spec = {**world["study"].spec, "narrate_episodes": False}
    db.commit()
    res = play.get(f"{base}/narration")
    assert res.status_code == 409 and res.json()["code"] == "not_narrated"
    assert "does not ask" in res.json()["detail"]
    assert play.get(f"{base}/frames/0").status_code == 409


def test_the_export_is_valid_json_of_the_documented_shape(world) -> None:  # type: ignore[no-untyped-def]
    c, study, ep = world["c"], world["study"], world["mine"][0]
    assert c.get(f"/api/studies/{study.id}/narrations").json() == []
    _add(c, ep, 0, 0, 'quote " and \\ backslash')
    text = c.get(f"/api/studies/{study.id}/narrations").text
    assert json.loads(text)[0]["text"] == 'quote " and \\ backslash'
