"""A paid crowd study under bursts, against a live uvicorn server with real threads (run
on SQLite and, with STUDIO_TEST_DATABASE_URL, on PostgreSQL): simultaneous joins of one
participant, balanced assignment, and many participants starting at once."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from server.models import Participant
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
