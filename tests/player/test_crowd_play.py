"""A crowd participant end to end over the API and the socket: assignment, a broken
environment that leads on (no Python error shown), quotas, completion code, designer list."""

from __future__ import annotations

import asyncio

import pytest

from server.core.db import make_sessionmaker
from server.models import Episode, Participant, StudyState
from server.player.session import LiveSession, PlayError, SessionContext
from server.principal import Principal
from server.services.crowd import episodes
from server.services.crowd.progress import FAILED_MESSAGE
from server.services.studies import studies
from tests.player.conftest import FAKE, Player, activate, counter_env, spec, ticket_socket

BROKEN = {"id": "broken", "name": "Broken", "source": {"kind": "dm_env",
          "factory": f"{FAKE}:broken_start"}}  # fmt: skip
PROLIFIC = {"PROLIFIC_PID": "pid-1", "STUDY_ID": "st", "SESSION_ID": "se"}


def _play_one(player, keep=True):
    """One episode of the one-step counter env."""
    player.until("episode_started")
    mark = len(player.seen)
    player.step(["KeyA"])
    if not any(m["type"] == "episode_ended" for m in player.seen[mark:]):
        player.until("episode_ended")
    player.send(type="save", keep=keep)
    return player.until("episode_saved")


def test_participant_is_led_past_a_broken_env_to_the_completion_code(factory, designer, db):
    study = activate(db, factory.study(designer, spec(
        BROKEN, counter_env(episode_len=1, episodes_per_participant=2),
        crowd={"assignment": "balanced", "completion_code": "DONE-42"},
    )))  # fmt: skip
    anon = factory.client()
    joined = anon.post("/api/play/join", json={"token": study.permalink_token,
                                               "params": PROLIFIC}).json()  # fmt: skip
    ticket = joined["ticket"]
    assert joined["participant"]["assigned_env"] == "broken"  # first in the study, all empty
    early = anon.post("/api/play/complete", headers={"X-Play-Ticket": ticket})
    assert early.status_code == 409 and "Still to play" in early.json()["detail"]
    with ticket_socket(anon, ticket) as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["participant"]["external_id"] == "pid-1"
        player.send(type="start")
        failed = player.until("error")
        assert failed["code"] == "env_failed" and failed["message"] == FAILED_MESSAGE
        assert failed["next"] == {"kind": "next_env", "env_id": "counter"}
        player.send(type="start", env_id="broken")  # balanced: not this one any more
        assert player.until("error")["code"] == "assigned_elsewhere"
        player.send(type="start")
        saved = _play_one(player)
        assert saved["next"] == {"kind": "again", "env_id": "counter"}
        player.send(type="start")
        saved = _play_one(player)
        assert saved["next"] == {"kind": "done", "env_id": None}
        assert saved["participant"]["done"] is True
        player.send(type="start")
        assert player.until("error")["code"] == "quota_reached"
        texts = [str(m) for m in player.seen]
    assert not [t for t in texts if "cannot build" in t or "RuntimeError" in t
                or "Traceback" in t]  # fmt: skip
    done = anon.post("/api/play/complete", headers={"X-Play-Ticket": ticket})
    assert done.status_code == 200, done.text
    assert done.json()["completion"] == {"code": "DONE-42", "redirect": {
        "method": "GET", "url": "https://app.prolific.com/submissions/complete?cc=DONE-42",
        "fields": {}}}  # fmt: skip
    row = db.query(Participant).one()
    db.refresh(row)
    assert row.completed_at is not None and row.completion_shown_at is not None
    # coming back: the code again, not a new session (even once the study is full or paused)
    key = done.json()["browser_key"]  # the browser that finished keeps it
    back = {"token": study.permalink_token, "params": PROLIFIC, "browser_key": key}
    again = anon.post("/api/play/join", json=back).json()
    assert again["participant"]["completed"] is True
    assert again["participant"]["completion"]["code"] == "DONE-42"
    # anyone else who types (or guesses) the id: finished, but no code
    other = anon.post("/api/play/join", json={"token": study.permalink_token,
                                              "params": PROLIFIC}).json()  # fmt: skip
    assert other["participant"]["completed"] is True and other["browser_key"] is None
    assert other["participant"]["completion"] is None
    assert other["participant"]["code_elsewhere"] is True
    forged = anon.post("/api/play/complete", headers={"X-Play-Ticket": other["ticket"],
                                                      "X-Browser-Key": "guess"}).json()  # fmt: skip
    assert forged["completion"] is None and "browser_key" not in forged
    # the designer sees the failure's details
    rows = factory.client(designer).get(f"/api/studies/{study.id}/participants").json()
    assert rows[0]["last_error"] and "cannot build" in rows[0]["last_error"]
    assert rows[0]["episodes"] == {"completed": 2, "failed": 1}
    assert rows[0]["completion_code_shown"] is True and rows[0]["platform"] == "prolific"


def test_consent_comes_before_playing(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env(), crowd={"consent": "OK?"})))
    anon = factory.client()
    join = {"token": study.permalink_token, "participant_id": "W-9"}
    ticket = anon.post("/api/play/join", json=join).json()["ticket"]
    with ticket_socket(anon, ticket) as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        assert player.until("error")["code"] == "consent_required"
    anon.post("/api/play/consent", json={"accept": True}, headers={"X-Play-Ticket": ticket})
    with ticket_socket(anon, ticket, "") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        assert player.until("episode_started")["ready_gate"] is True


def test_a_refused_start_builds_no_worker(factory, designer, db, settings, engine):
    """The reservation comes before the worker: a full environment whose worker could not
    even be built answers ``env_full`` (with the way forward), not ``env_failed``."""
    broken = {**BROKEN, "episodes_total": 1}
    study = activate(db, factory.study(designer, spec(
        broken, counter_env(episode_len=1), crowd={"assignment": "balanced"})))  # fmt: skip
    first, second = (Participant(study_id=study.id, external_id=f"W{i}") for i in (1, 2))
    db.add_all([first, second])
    db.commit()
    spec_ = studies.spec_of(study)
    # the only place is taken (an episode recording)
    episodes.create_episode(
        db, study_id=study.id, env_key="broken", session_id=None, seed=1, spec=spec_,
        principal=Principal.for_participant(study.id, first.id), data_root=settings.data_root,
    )  # fmt: skip
    live = LiveSession("s-2", SessionContext(
        study_id=study.id, spec=spec_, settings=settings,
        principal=Principal.for_participant(study.id, second.id), db=make_sessionmaker(engine),
        on_closed=lambda _s: None, workers_in_use=lambda _study: 0,
    ))  # fmt: skip

    async def start() -> PlayError:
        with pytest.raises(PlayError) as refused:
            await live.begin("broken")
        return refused.value

    refused = asyncio.run(start())
    assert refused.code == "env_full" and live.worker is None
    assert refused.extra["next"] == {"kind": "next_env", "env_id": "counter"}
    assert refused.extra["participant"]["assigned_env"] == "counter"
    assert db.query(Episode).filter_by(participant_id=second.id).count() == 0


def test_a_start_after_the_study_was_paused_says_so_and_how_to_go_on(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    ticket = anon.post("/api/play/join", json={"token": study.permalink_token,
                                               "params": PROLIFIC}).json()["ticket"]  # fmt: skip
    with ticket_socket(anon, ticket) as ws:
        player = Player(ws)
        player.until("hello")
        studies.change_state(db, study, StudyState.paused)  # while the socket is open
        player.send(type="start", env_id="counter")
        refused = player.until("error")
    assert refused["code"] == "study_paused"
    assert refused["next"] == {"kind": "paused", "env_id": None}
    assert refused["participant"]["study_state"] == "paused"
    assert db.query(Episode).count() == 0
