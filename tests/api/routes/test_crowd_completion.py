"""Completion codes and redirects per platform; the designer's participants list and CSV."""

from __future__ import annotations

import csv
import io

from server.models import Episode, EpisodeStatus, Participant
from server.services import crowd, episodes
from server.study_spec import CrowdSettings
from tests.player.conftest import activate, counter_env, spec


def _who(platform, **fields):
    return Participant(external_id="x", platform=platform, **fields)


def test_redirects_per_platform():
    plain = CrowdSettings(completion_code="C-1")
    assert crowd.completion(plain, _who("direct")) == {"code": "C-1", "redirect": None}
    mturk = _who("mturk", platform_session_id="ASG 1", submit_to="https://www.mturk.com")
    assert crowd.completion(plain, mturk)["redirect"] == {
        "method": "POST", "url": "https://www.mturk.com/mturk/externalSubmit",
        "fields": {"assignmentId": "ASG 1", "completion_code": "C-1"},
    }  # fmt: skip
    custom = CrowdSettings(completion_code="a-b", completion_url="https://e.org/?c={code}&x=1")
    assert crowd.completion(custom, mturk)["redirect"] == {
        "method": "GET", "url": "https://e.org/?c=a-b&x=1", "fields": {}}  # fmt: skip
    out = CrowdSettings(screenout_code="NO")
    assert crowd.screenout(out, _who("prolific"))["redirect"]["url"] == (
        "https://app.prolific.com/submissions/complete?cc=NO"
    )
    assert crowd.screenout(out, mturk)["redirect"] is None  # MTurk: return the HIT


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
    for path in ("participants", "participants.csv"):
        assert factory.client(other).get(f"/api/studies/{study.id}/{path}").status_code == 404
        assert anon.get(f"/api/studies/{study.id}/{path}").status_code == 401
    admin = factory.client(factory.user(role="admin"))
    assert admin.get(f"/api/studies/{study.id}/participants").status_code == 200
