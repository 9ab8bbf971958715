"""Completion codes and redirects per platform; the designer's participants list and CSV."""

from __future__ import annotations

import csv
import io

from server.models import Episode, EpisodeStatus, Participant
from server.services.crowd import codes, episodes
from server.study_spec import CrowdSettings
from tests.player.conftest import activate, counter_env, spec


def _who(platform, **fields):
    return Participant(external_id="x", platform=platform, **fields)


def test_redirects_per_platform():
    plain = CrowdSettings(completion_code="C-1")
    assert codes.completion(plain, _who("direct")) == {"code": "C-1", "redirect": None}
    mturk = _who("mturk", platform_session_id="ASG 1", submit_to="https://www.mturk.com")
    assert codes.completion(plain, mturk)["redirect"] == {
        "method": "POST", "url": "https://www.mturk.com/mturk/externalSubmit",
        "fields": {"assignmentId": "ASG 1", "completion_code": "C-1"},
    }  # fmt: skip
    custom = CrowdSettings(completion_code="a-b", completion_url="https://e.org/?c={code}&x=1")
    assert codes.completion(custom, _who("prolific"))["redirect"] == {
        "method": "GET", "url": "https://e.org/?c=a-b&x=1", "fields": {}}  # fmt: skip
    # an MTurk worker submits the HIT whatever URL the study set for its other participants
    assert codes.completion(custom, mturk)["redirect"]["url"] == (
        "https://www.mturk.com/mturk/externalSubmit"
    )
    full = CrowdSettings(completion_code="C-1", full_code="ROOMLESS")
    assert codes.full_outcome(full, _who("prolific"))["redirect"]["url"] == (
        "https://app.prolific.com/submissions/complete?cc=ROOMLESS"
    )
    assert codes.full_outcome(full, mturk)["redirect"]["fields"]["completion_code"] == "ROOMLESS"
    assert codes.full_outcome(CrowdSettings(), _who("prolific")) == {"code": "", "redirect": None}
    out = CrowdSettings(screenout_code="NO")
    assert codes.screenout(out, _who("prolific"))["redirect"]["url"] == (
        "https://app.prolific.com/submissions/complete?cc=NO"
    )
    assert codes.screenout(out, mturk)["redirect"] is None  # MTurk: return the HIT


def _finished(db, study, participant, settings, duration_s):
    from server.principal import Principal

    row = episodes.create_episode(
        db, study_id=study.id, env_key="counter", session_id=None,
        principal=Principal.for_participant(study.id, participant.id), seed=1,
        data_root=settings.data_root,
    )  # fmt: skip
    episodes.finish_episode(db, row.id, episodes.EpisodeResult(
        status=EpisodeStatus.completed, steps=2, total_reward=1.0))  # fmt: skip
    stored = db.get(Episode, row.id)
    stored.duration_s = duration_s
    db.commit()


def test_requirements_allow_more_episodes_until_met(factory, db, settings):
    study = activate(db, factory.study(factory.user(), spec(
        counter_env(), crowd={"requirements": {"min_play_time_s": 60}})))  # fmt: skip
    anon = factory.client()
    body = anon.post("/api/play/join", json={"token": study.permalink_token,
                                             "participant_id": "W"}).json()  # fmt: skip
    person = db.query(Participant).one()
    _finished(db, study, person, settings, 20.0)
    state = anon.get("/api/play/me", headers={"X-Play-Ticket": body["ticket"]}).json()
    assert state["done"] is False and state["requirements"]["met"] is False
    assert state["progress"]["counter"]["status"] == "open"  # one more, though 1 of 1 is played
    assert state["next"] == {"kind": "next_env", "env_id": "counter"}
    _finished(db, study, person, settings, 45.0)
    state = anon.get("/api/play/me", headers={"X-Play-Ticket": body["ticket"]}).json()
    assert state["done"] is True and state["play_time_s"] == 65.0


def test_designer_participants_list_and_csv(factory, db, settings):
    owner, other = factory.user(), factory.user()
    study = activate(db, factory.study(owner, spec(counter_env())))
    anon = factory.client()
    for pid in ("=HYPERLINK(1)", "P-2"):
        anon.post("/api/play/join", json={"token": study.permalink_token, "participant_id": pid})
    people = db.query(Participant).order_by(Participant.id).all()
    _finished(db, study, people[1], settings, 12.5)
    mine = factory.client(owner)
    rows = mine.get(f"/api/studies/{study.id}/participants")
    assert rows.status_code == 200
    assert [r["external_id"] for r in rows.json()] == ["=HYPERLINK(1)", "P-2"]
    assert rows.json()[1]["episodes"] == {"completed": 1} and rows.json()[1]["play_time_s"] == 12.5
    res = mine.get(f"/api/studies/{study.id}/participants.csv")
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(res.text)))
    assert table[0][0] == "external_id" and len(table) == 3
    assert table[1][0] == "'=HYPERLINK(1)"  # never run as a formula by a spreadsheet
    assert table[2][0] == "P-2" and table[2][table[0].index("episodes_completed")] == "1"
    assert table[2][table[0].index("episodes_verified")] == "0"  # not checked (pending)
    assert rows.json()[1]["episodes_verified"] == 0
    for path in ("participants", "participants.csv"):
        assert factory.client(other).get(f"/api/studies/{study.id}/{path}").status_code == 404
        assert anon.get(f"/api/studies/{study.id}/{path}").status_code == 401
    admin = factory.client(factory.user(role="admin"))
    assert admin.get(f"/api/studies/{study.id}/participants").status_code == 200


def test_full_is_not_finished(factory, db, settings):
    """A participant for whom the study filled up gets the full outcome and its code, not the
    completion code; the designer sees it in the list and the CSV."""
    owner = factory.user()
    study = activate(db, factory.study(owner, spec(
        counter_env(episodes_total=1),
        crowd={"completion_code": "PAID", "full_code": "ROOMLESS"})))  # fmt: skip
    players = {}
    for pid in ("early", "late"):
        res = factory.client().post(
            "/api/play/join", json={"token": study.permalink_token, "params": {"PROLIFIC_PID": pid}}
        )
        players[pid] = res.json()["ticket"]
    early, late = db.query(Participant).order_by(Participant.id).all()
    _finished(db, study, early, settings, 10.0)
    anon = factory.client()

    def complete(pid):  # type: ignore[no-untyped-def]
        return anon.post("/api/play/complete", headers={"X-Play-Ticket": players[pid]}).json()

    state = anon.get("/api/play/me", headers={"X-Play-Ticket": players["late"]}).json()
    assert state["done"] is True and state["ends_full"] is True
    assert state["study_state"] == "full"
    finished, cut_short = complete("early"), complete("late")
    assert finished["outcome"] == "completed" and finished["completion"]["code"] == "PAID"
    assert cut_short["outcome"] == "full" and cut_short["completion"] is None
    assert cut_short["full_outcome"] == {"code": "ROOMLESS", "redirect": {
        "method": "GET", "url": "https://app.prolific.com/submissions/complete?cc=ROOMLESS",
        "fields": {}}}  # fmt: skip
    # coming back (the study is full now): the same page again
    again = anon.post("/api/play/join", json={"token": study.permalink_token,
                                              "params": {"PROLIFIC_PID": "late"}})  # fmt: skip
    assert again.status_code == 200 and again.json()["participant"]["outcome"] == "full"
    rows = factory.client(owner).get(f"/api/studies/{study.id}/participants").json()
    assert [(r["external_id"], r["outcome"]) for r in rows] == [("early", "completed"),
                                                                ("late", "full")]  # fmt: skip
    table = list(csv.DictReader(io.StringIO(
        factory.client(owner).get(f"/api/studies/{study.id}/participants.csv").text)))  # fmt: skip
    assert [(r["external_id"], r["outcome"], bool(r["full_at"])) for r in table] == [
        ("early", "completed", False), ("late", "full", True)]  # fmt: skip
