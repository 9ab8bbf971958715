"""A paid crowd study under bursts, against a live uvicorn server with real threads (run
on SQLite and, with STUDIO_TEST_DATABASE_URL, on PostgreSQL): simultaneous joins of one
participant, balanced assignment, and many participants starting at once."""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections import Counter
from typing import Any

import httpx
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from server.models import Episode, EpisodeStatus, Participant
from server.player.protocol import SUBPROTOCOL
from tests.player.conftest import activate, counter_env, spec

PID = "5f8a0c0ffee0123456789abc"


def _crowd_study(db, factory, *envs, **crowd):  # type: ignore[no-untyped-def]
    return activate(db, factory.study(factory.user(), spec(*envs, crowd=crowd)))


def _at_once(n: int, fn) -> list[Any]:  # type: ignore[no-untyped-def]
    """``fn(i)`` in ``n`` threads released together; their results in order."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # noqa: BLE001 - reported by the test's assertion
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def _join(base: str, token: str, params: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{base}/api/play/join", json={"token": token, "params": params},
                      timeout=60)  # fmt: skip


def test_ten_simultaneous_joins_of_one_participant_make_one_row(live_server, factory, db):
    study = _crowd_study(db, factory, counter_env())
    params = {"PROLIFIC_PID": PID, "STUDY_ID": "st-1", "SESSION_ID": "se-1"}
    answers = _at_once(10, lambda _i: _join(live_server, study.permalink_token, params))
    assert [a.status_code for a in answers] == [200] * 10, [a.text for a in answers]
    assert {a.json()["participant_id"] for a in answers} == {PID}
    db.expire_all()
    assert db.query(Participant).filter_by(study_id=study.id, external_id=PID).count() == 1


def test_balanced_assignment_of_a_burst_stays_even(live_server, factory, db):
    envs = [counter_env(name) for name in ("red", "green", "blue")]
    study = _crowd_study(db, factory, *envs, assignment="balanced")
    answers = _at_once(
        9, lambda i: _join(live_server, study.permalink_token, {"PROLIFIC_PID": f"P{i}"})
    )
    assert [a.status_code for a in answers] == [200] * 9, [a.text for a in answers]
    split = Counter(a.json()["participant"]["assigned_env"] for a in answers)
    assert sorted(split.values()) == [3, 3, 3], split


# -- fifty participants starting at once ---------------------------------------------------
def _messages(ws):  # type: ignore[no-untyped-def]
    """Control messages of a socket, frames skipped."""
    while True:
        raw = ws.recv(timeout=120)
        if isinstance(raw, str):
            yield json.loads(raw)


def _participant(base: str, token: str, i: int) -> dict[str, Any]:
    """Join, start, and either play the one-step episode to the end or follow the refusal's
    ``next`` until there is nothing left; what happened, with the refused starts' latency."""
    joined = _join(base, token, {"PROLIFIC_PID": f"B{i:02d}"})
    if joined.status_code != 200:
        return {"join": joined.status_code, "text": joined.text}
    ticket = joined.json()["ticket"]
    out: dict[str, Any] = {"join": 200, "played": None, "refusals": [], "refused_s": []}
    url = base.replace("http", "ws", 1) + "/ws/play"
    with connect(url, subprotocols=[Subprotocol(SUBPROTOCOL), Subprotocol(f"ticket.{ticket}")],
                 open_timeout=60) as ws:  # fmt: skip
        messages = _messages(ws)
        assert next(m for m in messages if m["type"] in ("hello", "error"))["type"] == "hello"
        for _ in range(5):
            sent = time.perf_counter()
            ws.send(json.dumps({"type": "start"}))
            got = next(m for m in messages if m["type"] in ("episode_started", "error"))
            if got["type"] == "episode_started":
                ws.send(json.dumps({"type": "go"}))
                next(m for m in messages if m["type"] == "started")
                ws.send(json.dumps({"type": "input", "keys": ["KeyA"], "client_ms": 1000.0,
                                    "seen_step": 0}))  # fmt: skip
                next(m for m in messages if m["type"] == "episode_ended")
                ws.send(json.dumps({"type": "save", "keep": True}))
                saved = next(m for m in messages if m["type"] == "episode_saved")
                out["played"] = got["episode"]["env_id"]
                out["next"] = saved["next"]
                return out
            out["refused_s"].append(time.perf_counter() - sent)
            out["refusals"].append(got["code"])
            out["next"] = got.get("next")
            out["participant"] = got.get("participant")
            if not got.get("next") or got["next"]["kind"] == "done":
                done = httpx.post(f"{base}/api/play/complete", headers={"X-Play-Ticket": ticket},
                                  timeout=60)  # fmt: skip
                out["outcome"] = done.json().get("outcome") if done.status_code == 200 else done
                return out
    return out


def test_fifty_start_at_once_on_a_balanced_study(live_server, factory, db):
    envs = [counter_env(name, episode_len=1, episodes_total=5)  # one step, five per game
            for name in ("red", "green", "blue")]  # fmt: skip
    study = _crowd_study(db, factory, *envs, assignment="balanced")
    began = time.perf_counter()
    results = _at_once(50, lambda i: _participant(live_server, study.permalink_token, i))
    wall = time.perf_counter() - began
    errors = [r for r in results if not isinstance(r, dict) or r["join"] != 200]
    assert not errors, errors
    played = Counter(r["played"] for r in results if r["played"])
    refused = [r for r in results if not r["played"]]
    db.expire_all()
    completed = Counter(
        e.env_key for e in db.query(Episode).filter_by(study_id=study.id,
                                                       status=EpisodeStatus.completed)
    )  # fmt: skip
    latencies = sorted(s for r in results for s in r["refused_s"])
    print(f"\n50 at once: {sum(played.values())} played {dict(played)}, {len(refused)} refused "
          f"in {wall:.1f} s; refused starts answered in median "
          f"{statistics.median(latencies) * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms "
          f"({len(latencies)} refusals)")  # fmt: skip
    assert completed == {"red": 5, "green": 5, "blue": 5}
    assert played == completed and len(refused) == 35
    for r in refused:  # each one knows where it stands and what comes next
        assert set(r["refusals"]) <= {"env_full", "quota_reached"}, r
        assert r["next"] == {"kind": "done", "env_id": None}, r
        assert r["participant"]["done"] is True and r["participant"]["ends_full"] is True, r
        assert r["outcome"] == "full", r  # the full page, not the completion code
