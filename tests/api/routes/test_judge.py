"""Judging through the API, on real recorded episodes: a Prolific participant joins a
feedback study, is given items whose frames are the recorded JPEGs, answers each once, and
finishes with the completion code; every refusal says why and records nothing."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
import simplejpeg
from sqlalchemy import func, select

from server.models import Episode, Judgement, Participant, StudyState
from server.recording.format import episode_dir
from server.services.feedback import clips
from server.services.studies import studies
from server.study_spec import StudySpec
from tests.api.routes.judged import PROLIFIC, feedback_spec, played
from tests.api.routes.recorded import CARTPOLE_SPEC, ImageEnv, Inserter, two_env_spec
from tests.export.recordings import record_episode


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    return played(db, factory, settings.data_root, recorded)


def _join(client, study, pid: str):  # type: ignore[no-untyped-def]
    res = client.post("/api/play/join", json={
        "token": study.permalink_token, "params": {"PROLIFIC_PID": pid, **PROLIFIC}})  # fmt: skip
    assert res.status_code == 200, res.text
    return res.json()


def _h(joined) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {"X-Play-Ticket": joined["ticket"], "X-Browser-Key": joined["browser_key"]}


def _answer_for(item) -> dict:  # type: ignore[no-untyped-def]
    return {"choice": "left"} if item["question"]["kind"] == "compare" else {"rating": 4}


def test_a_participant_judges_real_clips_and_gets_the_completion_code(world, factory, db):
    study = world.make(db, factory, clip_steps=4)
    anon = factory.client()
    joined = _join(anon, study, "judge-one")
    assert joined["study"]["kind"] == "feedback" and joined["study"]["environments"] == []
    assert joined["participant"]["judging"] == {"answered": 0, "required": 4}
    assert joined["participant"]["next"]["kind"] == "judge"
    assert "gold" not in str(joined["study"]["judging"])
    by_id = {e.id: e for e in world.episodes}
    seen_kinds = set()
    for n in range(4):
        nxt = anon.get("/api/play/judge/next", headers=_h(joined))
        assert nxt.status_code == 200, nxt.text
        item = nxt.json()["item"]
        assert item["number"] == n + 1 and item["of"] == 4
        again = anon.get("/api/play/judge/next", headers=_h(joined)).json()["item"]
        assert again["token"] == item["token"]  # a reload gives the same item
        seen_kinds.add(item["question"]["kind"])
        wanted = 2 if item["question"]["kind"] == "compare" else 1
        assert len(item["clips"]) == wanted and all(c["frames"] == 4 for c in item["clips"])
        for clip in range(wanted):
            res = anon.get(f"/api/play/judge/{item['token']}/clips/{clip}/frames/3",
                           headers=_h(joined))  # fmt: skip
            assert res.status_code == 200 and res.headers["content-type"] == "image/jpeg"
            assert simplejpeg.decode_jpeg(res.content).shape[2] == 3
        past = anon.get(f"/api/play/judge/{item['token']}/clips/0/frames/4", headers=_h(joined))
        assert past.status_code == 404 and "frames 0..3" in past.json()["detail"]
        res = anon.post(f"/api/play/judge/{item['token']}/answer", json=_answer_for(item),
                        headers=_h(joined))  # fmt: skip
        assert res.status_code == 200, res.text
        assert res.json()["judging"]["answered"] == n + 1
        twice = anon.post(f"/api/play/judge/{item['token']}/answer", json=_answer_for(item),
                          headers=_h(joined))  # fmt: skip
        assert twice.status_code == 409 and twice.json()["code"] == "already_answered"
    assert seen_kinds == {"compare", "rate"}
    done = anon.get("/api/play/judge/next", headers=_h(joined)).json()
    assert done["item"] is None and done["participant"]["done"] is True
    finished = anon.post("/api/play/complete", headers=_h(joined))
    assert finished.status_code == 200, finished.text
    assert finished.json()["completion"]["code"]
    rows = db.scalars(select(Judgement).where(Judgement.study_id == study.id)).all()
    assert len(rows) == 4 and all(r.answered_at is not None for r in rows)
    assert {r.item.episode_a for r in rows} <= set(by_id)


def test_refusals_say_why_and_record_nothing(world, factory, db):
    study = world.make(db, factory, min_watch_s=30)
    anon, other = factory.client(), factory.client()
    me, them = _join(anon, study, "judge-a"), _join(other, study, "judge-b")
    item = anon.get("/api/play/judge/next", headers=_h(me)).json()["item"]
    assert 29 < item["wait_s"] <= 30
    url = f"/api/play/judge/{item['token']}/answer"
    fast = anon.post(url, json=_answer_for(item), headers=_h(me))
    assert fast.status_code == 409 and fast.json()["code"] == "too_fast"
    assert 0 < fast.json()["detail"]["retry_after_s"] <= 30
    # another participant's token reads as absent, for its answer and its frames
    theirs = other.post(url, json=_answer_for(item), headers=_h(them))
    assert theirs.status_code == 404 and theirs.json()["code"] == "not_assigned"
    peek = other.get(f"/api/play/judge/{item['token']}/clips/0/frames/0", headers=_h(them))
    assert peek.status_code == 404
    unknown = anon.post("/api/play/judge/nope/answer", json={"choice": "left"}, headers=_h(me))
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_assigned"
    judgement = db.scalar(select(Judgement).where(Judgement.token == item["token"]))
    judgement.assigned_at -= timedelta(seconds=60)  # watched long enough
    db.commit()
    for body, field in (({"choice": "up"}, "choice"), ({"rating": 2.5}, "rating"),
                        ({"rating": 9}, "rating"), ({"choice": "left", "x": 1}, "x")):  # fmt: skip
        if item["question"]["kind"] == "compare" and field == "rating":
            body = {"choice": "sideways"}
        elif item["question"]["kind"] == "rate" and field == "choice":
            body = {"rating": 0}
        res = anon.post(url, json=body, headers=_h(me))
        assert res.status_code == 422, res.text
        assert res.json()["message"]
    bad_number = anon.post(url, content=b'{"rating": NaN}', headers={
        **_h(me), "Content-Type": "application/json"})  # fmt: skip
    assert bad_number.status_code == 422
    no_ticket = anon.post(url, json=_answer_for(item))
    assert no_ticket.status_code == 401
    answered = db.scalar(select(func.count()).select_from(Judgement).where(
        Judgement.answered_at.is_not(None)))  # fmt: skip
    assert answered == 0


def test_a_paused_study_and_a_play_study_refuse_judging(world, factory, db):
    study = world.make(db, factory)
    anon = factory.client()
    joined = _join(anon, study, "judge-p")
    studies.change_state(db, study, StudyState.paused)
    res = anon.get("/api/play/judge/next", headers=_h(joined))
    assert res.status_code == 409 and res.json()["code"] == "paused"
    play = factory.study(
        world.owner,
        {
            "name": "P",
            "environments": [
                {"id": "cp", "name": "CP", "source": {"kind": "gymnasium", "id": "CartPole-v1"}}
            ],
        },
    )
    studies.change_state(db, play, StudyState.active)
    player = _join(anon, play, "player-x")
    res = anon.get("/api/play/judge/next", headers=_h(player))
    assert res.status_code == 409 and res.json()["code"] == "not_feedback"


def test_a_source_must_be_the_designers_own_play_study(world, factory, db):
    designer = factory.client(world.owner)
    mine = designer.post("/api/studies", json={"spec": feedback_spec(world.source.id)})
    assert mine.status_code == 201, mine.text
    stranger = factory.client(factory.user())
    res = stranger.post("/api/studies", json={"spec": feedback_spec(world.source.id)})
    assert res.status_code == 422
    assert res.json()["detail"][0]["loc"][-3:] == ["source", "studies", 0]
    nested = designer.post("/api/studies", json={"spec": feedback_spec(mine.json()["id"])})
    assert nested.status_code == 422 and "feedback study" in nested.json()["message"]
    mixed = feedback_spec(world.source.id) | {
        "environments": [
            {"id": "cp", "name": "CP", "source": {"kind": "gymnasium", "id": "CartPole-v1"}}
        ]
    }
    assert designer.post("/api/studies", json={"spec": mixed}).status_code == 422
    with pytest.raises(ValueError, match="feedback section"):
        StudySpec.model_validate({"name": "x", "kind": "feedback"})


def test_nothing_left_to_judge_ends_with_the_full_outcome(world, factory, db):
    study = world.make(db, factory, questions=[
        {"id": "balance", "kind": "compare", "prompt": "Which?"}], pairing="all_pairs",
        judgements_per_item=1, judgements_per_participant=50)  # fmt: skip
    anon = factory.client()
    joined = _join(anon, study, "judge-all")
    answered = 0
    while item := anon.get("/api/play/judge/next", headers=_h(joined)).json()["item"]:
        res = anon.post(f"/api/play/judge/{item['token']}/answer", json={"choice": "equal"},
                        headers=_h(joined))  # fmt: skip
        assert res.status_code == 200
        answered += 1
    assert answered == 10  # every pair of the five episodes, once
    done = anon.post("/api/play/complete", headers=_h(joined))
    assert done.status_code == 200 and done.json()["full"] is True
    person = db.scalar(select(Participant).where(Participant.external_id == "judge-all"))
    assert person.full_at is not None


def _bundle(client, token: str, clip: int, joined) -> list[bytes]:  # type: ignore[no-untyped-def]
    """Clip ``clip`` in one answer, split at its X-Frame-Sizes."""
    res = client.get(f"/api/play/judge/{token}/clips/{clip}", headers=_h(joined))
    assert res.status_code == 200, res.text
    assert res.headers["content-type"] == "application/octet-stream"
    assert res.headers["cache-control"] == "private, max-age=3600"
    sizes = [int(s) for s in res.headers["x-frame-sizes"].split(",")]
    assert sum(sizes) == len(res.content) == int(res.headers["content-length"])
    at, frames = 0, []
    for size in sizes:
        frames.append(res.content[at : at + size])
        at += size
    return frames


def _one_by_one(client, token: str, clip: int, n: int, joined) -> list[bytes]:  # type: ignore[no-untyped-def]
    out = []
    for i in range(n):
        res = client.get(f"/api/play/judge/{token}/clips/{clip}/frames/{i}", headers=_h(joined))
        assert res.status_code == 200, res.text
        out.append(res.content)
    return out


def test_the_frames_are_the_recorded_jpegs_in_the_shown_order(world, factory, db, recorded):
    """Each clip, in one answer and frame by frame, is the recorded JPEGs of its episode's
    steps, in the order shown: the item as drawn, then shown the other way round."""
    study = world.make(db, factory, questions=[
        {"id": "balance", "kind": "compare", "prompt": "Which?"}])  # fmt: skip
    anon = factory.client()
    joined = _join(anon, study, "judge-frames")
    item = anon.get("/api/play/judge/next", headers=_h(joined)).json()["item"]
    judgement = db.scalar(select(Judgement).where(Judgement.token == item["token"]))
    frames = {r.episode_id: r.frames for r in recorded["cartpole"]}
    for swapped in (judgement.swapped, not judgement.swapped):
        judgement.swapped = swapped  # as a judge who was shown it the other way round
        db.commit()
        it = judgement.item
        order = [(it.episode_a, it.a_start, it.a_end), (it.episode_b, it.b_start, it.b_end)]
        for clip, (episode_id, first, last) in enumerate(order[::-1] if swapped else order):
            bundle = _bundle(anon, item["token"], clip, joined)
            assert bundle == frames[episode_id][first : last + 1]  # whole episodes
            assert bundle == _one_by_one(anon, item["token"], clip, len(bundle), joined)


def test_a_clip_in_one_answer_of_recorded_observation_images(world, factory, db, settings,
                                                              tmp_path):  # fmt: skip
    """``view: observation``: the bundle holds the observation images as JPEG, the same bytes
    as the frame route; a study over episodes without an image observation says so."""
    source = factory.study(world.owner, two_env_spec("Pictures"))
    put = Inserter(db, settings.data_root)
    for n in range(2):
        episode_id = f"e{n}".ljust(32, "0")
        rec = record_episode(ImageEnv, tmp_path / episode_id, env_id="cartpole",
                             episode_id=episode_id, seed=n, env_config=CARTPOLE_SPEC)  # fmt: skip
        put.add(source, rec)
    spec = feedback_spec(source.id, view="observation", questions=[
        {"id": "balance", "kind": "compare", "prompt": "Which?"}])  # fmt: skip
    study = studies.change_state(db, studies.create_study(
        db, world.owner.id, StudySpec.model_validate(spec)), StudyState.active)  # fmt: skip
    anon = factory.client()
    joined = _join(anon, study, "judge-pictures")
    item = anon.get("/api/play/judge/next", headers=_h(joined)).json()["item"]
    for clip in (0, 1):
        n = item["clips"][clip]["frames"]
        bundle = _bundle(anon, item["token"], clip, joined)
        assert len(bundle) == n == 4  # ImageEnv's episodes: 4 timesteps, whole
        assert all(simplejpeg.decode_jpeg(f).shape == (24, 32, 3) for f in bundle)
        assert bundle == _one_by_one(anon, item["token"], clip, n, joined)
    blind = world.make(db, factory, view="observation")  # CartPole: a vector, no picture
    other = _join(anon, blind, "judge-blind")
    token = anon.get("/api/play/judge/next", headers=_h(other)).json()["item"]["token"]
    for url in (f"/api/play/judge/{token}/clips/0", f"/api/play/judge/{token}/clips/0/frames/0"):
        res = anon.get(url, headers=_h(other))
        assert res.status_code == 404 and "no image" in res.json()["detail"]


def test_a_clip_in_one_answer_is_refused_as_its_frames_are(world, factory, db, settings):
    """Another participant's token, no ticket, a clip the item lacks; then its episode's log
    deleted (before it was read: an open reader keeps reading), then its row: a 404 with a
    sentence each time, never a 500."""
    study = world.make(db, factory, clip_steps=4, questions=[
        {"id": "smooth", "kind": "rate", "prompt": "How smooth?", "scale_min": 1,
         "scale_max": 5}])  # fmt: skip
    anon, other = factory.client(), factory.client()
    me, them = _join(anon, study, "judge-own"), _join(other, study, "judge-other")
    token = anon.get("/api/play/judge/next", headers=_h(me)).json()["item"]["token"]
    url = f"/api/play/judge/{token}/clips/0"
    theirs = other.get(url, headers=_h(them))
    assert theirs.status_code == 404 and theirs.json()["code"] == "not_assigned"
    assert anon.get(url).status_code == 401
    one = anon.get(f"/api/play/judge/{token}/clips/1", headers=_h(me))
    assert one.status_code == 404 and one.json()["detail"] == "This item has one clip."
    assert anon.get(f"/api/play/judge/{token}/clips/2", headers=_h(me)).status_code == 422
    judgement = db.scalar(select(Judgement).where(Judgement.token == token))
    episode = db.get(Episode, judgement.item.episode_a)
    shutil.rmtree(episode_dir(settings.data_root, world.source.id, episode.id))
    missing = anon.get(url, headers=_h(me))
    assert (
        missing.status_code == 404 and missing.json()["detail"] == "The episode's log is missing."
    )
    db.delete(episode)
    db.commit()
    for gone in (anon.get(url, headers=_h(me)),
                 anon.get(f"{url}/frames/0", headers=_h(me))):  # fmt: skip
        assert gone.status_code == 404 and gone.json()["detail"] == clips.GONE
