"""A worker killed with SIGKILL mid-episode: the episode row counts what its log holds, and
the log holds every step recorded more than MAX_LOSS_S (0.25 s) before the kill."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from server.models import EpisodeStatus
from server.recording.format import episode_dir, now_ms
from server.recording.writer import MAX_LOSS_S, open_reader
from tests.player.conftest import Player, counter_env, row_of, spec

PERIOD_S = 0.02  # the player's step rate: one input every 20 ms (50 steps/s)


def _flushed_bytes(log_dir: Path) -> int:
    """Bytes of steps the worker has handed to the OS (the steps file grows at each flush)."""
    return sum(p.stat().st_size for p in log_dir.glob("*/steps.riegeli"))


@pytest.mark.parametrize(
    ("after", "status", "reply"),
    [
        ({"type": "input", "keys": ["KeyB"], "client_ms": 2000.0}, "failed", "episode_failed"),
        ({"type": "cancel"}, "canceled", "episode_saved"),  # end_episode finds it dead
    ],
)
def test_killed_worker_row_counts_the_log(factory, designer, db, app, settings, after, status,
                                          reply):  # fmt: skip
    study = factory.study(designer, spec(counter_env(episode_len=100_000)))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        episode = player.until("episode_started")["episode"]
        player.frame()
        log_dir = episode_dir(settings.data_root, study.id, episode["id"])
        # Play at a known rate; kill at the worst moment seen: as soon as no flush was seen
        # for longer than the bound (then unflushed steps would be older than it), else
        # after 2 s of play.
        due = last_flush = time.monotonic()
        size = _flushed_bytes(log_dir)
        for i in range(100):
            due += PERIOD_S
            time.sleep(max(0.0, due - time.monotonic()))
            player.step(["KeyB"], client_ms=1000.0 + i)
            if (grown := _flushed_bytes(log_dir)) != size:
                size, last_flush = grown, time.monotonic()
            elif i > 10 and time.monotonic() - last_flush > MAX_LOSS_S + 2 * PERIOD_S:
                break
        (live,) = app.state.player_registry.sessions.values()
        killed_ms = now_ms()
        os.kill(live.worker.pid, signal.SIGKILL)
        player.send(**after)  # the session finds the worker dead
        saved = player.until(reply)

    row = row_of(db, episode["id"])
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    logged = len(steps)
    # the row states what the log holds
    assert row.status == EpisodeStatus(status)
    assert (row.steps, row.total_reward) == (logged, 2.0 * (logged - 1))
    if reply == "episode_saved":  # the player is told the same
        assert (saved["steps"], saved["return"]) == (logged, 2.0 * (logged - 1))
    # the log is steps 0..logged-1, each recorded at or before its frame left the server
    sent_ms = {step: server_ms for _, step, server_ms, _, _ in player.frames}
    applied = [json.loads(s.custom_data["timing"])["applied"] for s in steps]
    assert all(applied[i] <= sent_ms[i] for i in range(logged))
    # every step recorded (applied, hence sent) more than 0.25 s before the kill is there
    old = [step for step, ms in sent_ms.items() if ms <= killed_ms - MAX_LOSS_S * 1000]
    assert old and max(old) < logged, (max(old), logged, killed_ms - sent_ms[logged])
