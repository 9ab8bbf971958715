"""Quality signals of played episodes: what the session counts as it plays equals what the
log the worker wrote says (the backfill's source), in sync and in async mode."""

from __future__ import annotations

import pytest

from server.models import EpisodeStatus
from server.services.review import quality
from tests.player.conftest import Player, counter_env, row_of, spec

SYNC_KEYS = [["KeyA"], [], ["KeyB"], ["KeyB"], [], [], ["KeyA", "KeyB"], ["KeyA"]]


def test_sync_signals_equal_the_logs(factory, designer, db) -> None:  # type: ignore[no-untyped-def]
    study = factory.study(designer, spec(counter_env(episode_len=100)))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        episode = player.until("episode_started")["episode"]
        player.frame()
        for i, keys in enumerate(SYNC_KEYS):
            player.step(keys, client_ms=1000.0 + 10 * i)
        player.send(type="cancel")
        player.until("episode_saved")
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.canceled and row.steps == len(SYNC_KEYS) + 1
    assert row.quality_at is not None
    # 3 of 8 actions held nothing; presses: A, B, (B held), B again after a gap, A+B (A new), A
    assert row.idle_share == pytest.approx(3 / 8)
    assert row.duration_s and row.inputs_per_s == pytest.approx(4 / row.duration_s)
    from_log = quality.from_log(row.storage_path, row.duration_s)
    assert from_log is not None
    assert (row.idle_share, row.inputs_per_s) == pytest.approx(
        (from_log.idle_share, from_log.inputs_per_s)
    )
    # the step's ack comes 5 ms after its input (tests/player/conftest.py Player.step)
    assert row.latency_p50_ms == 5.0 and row.latency_p99_ms == 5.0


def test_async_signals_equal_the_logs(factory, designer, db) -> None:  # type: ignore[no-untyped-def]
    env = counter_env(episode_len=100_000, mode="async", fps=60)
    study = factory.study(designer, spec(env))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        episode = player.until("episode_started")["episode"]
        # idle for a while, then hold A, then let go: each for several ticks
        for keys in ([], ["KeyA"], []):
            player.send(type="input", keys=keys, client_ms=1.9e12, seen_step=-1)
            for _ in range(12):
                player.frame()
        player.send(type="pause")  # the worker stops ticking: no step is still on its way
        player.until("paused")
        player.send(type="cancel")
        player.until("episode_saved")
    row = row_of(db, episode["id"])
    from_log = quality.from_log(row.storage_path, row.duration_s)
    assert from_log is not None and from_log.idle_share is not None
    assert row.quality_at is not None and row.idle_share is not None
    assert 0.0 < from_log.idle_share < 1.0  # both idle and held actions were recorded
    assert row.idle_share == pytest.approx(from_log.idle_share)
    assert row.inputs_per_s == pytest.approx(from_log.inputs_per_s)
