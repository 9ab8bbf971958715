"""The adaptive stream: quality follows the player's link, the recording does not."""

from __future__ import annotations

import json
import time

import numpy as np

from server.models import Episode
from server.player.adaptive import LAG_MS, RAISE_AFTER_S, WINDOW_MS, QualityController
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec


def _feed(ctl: QualityController, start_ms: float, seconds: float, delay_ms: float,
          dropped: int = 0) -> tuple[float, list[str]]:  # fmt: skip
    """An ack every 50 ms for ``seconds``; the levels it changed to."""
    changes, now = [], start_ms
    while now < start_ms + seconds * 1000:
        level = ctl.on_ack(delay_ms, now, dropped)
        if level is not None:
            changes.append(level)
        now += 50
    return now, changes


def test_the_controller_steps_down_under_lag_or_drops_and_back_up_when_calm():
    ctl = QualityController("high")
    now, changes = _feed(ctl, 0, 3, delay_ms=40)  # a steady link: nothing changes
    assert changes == [] and ctl.level == "high"
    now, changes = _feed(ctl, now, 2.5, delay_ms=40 + LAG_MS + 60)  # queueing: one per window
    assert changes == ["medium", "low"] and ctl.level == "low"
    now, changes = _feed(ctl, now, 2, delay_ms=40 + LAG_MS + 60)  # no lower than low
    assert changes == []
    now, changes = _feed(ctl, now, RAISE_AFTER_S + 1.5, delay_ms=40)  # calm: one level back
    assert changes == ["medium"]
    now, changes = _feed(ctl, now, RAISE_AFTER_S + 1.5, delay_ms=40)
    assert changes == ["high"]
    now, changes = _feed(ctl, now, RAISE_AFTER_S + 1.5, delay_ms=40)  # never above the ceiling
    assert changes == [] and ctl.level == "high"
    # frames the server dropped for this player count as trouble too
    _, changes = _feed(ctl, now, WINDOW_MS / 1000 + 0.2, delay_ms=40, dropped=3)
    assert changes == ["medium"]
    ctl.set_ceiling("low")
    assert ctl.level == "low"


def _play(factory, designer, adaptive: bool, lag_from: int | None) -> tuple[list, list]:
    """18 sync steps with the same seed and keys; from step ``lag_from`` each frame is acked
    0.3 s late (a link that queues). The qualities announced and the episode's id."""
    env = counter_env(episode_len=10_000, seeds=[4])
    env.update(image_quality="high", adaptive_quality=adaptive)
    study = factory.study(designer, spec(env))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        episode = player.start()
        for i in range(1, 19):
            player.send(type="input", keys=["KeyA" if i % 3 else "KeyB"], client_ms=1e12 + i,
                        seen_step=i - 1)  # fmt: skip
            frame = player.frame()
            if lag_from is not None and i >= lag_from:
                time.sleep(0.3)
            player.send(type="ack", episode=frame[0], step=frame[1], drawn_ms=1e12 + i + 5)
        player.send(type="cancel")
        player.until("episode_saved")
    announced = [m["quality"] for m in player.seen if m["type"] == "setting" and m.get("adaptive")]
    return announced, episode["id"]


def _recorded(db, episode_id: str) -> tuple[list[np.ndarray], list[int | None]]:
    with open_reader(db.get(Episode, episode_id).storage_path) as reader:
        steps = list(reader.steps)
    observations = [np.asarray(s.timestep.observation) for s in steps]
    qualities = [json.loads(s.custom_data["timing"]).get("jpeg_quality") for s in steps]
    return observations, qualities


def test_a_lagging_link_gets_a_lower_quality_recorded_per_step(factory, designer, db):
    announced, adaptive_id = _play(factory, designer, adaptive=True, lag_from=4)
    assert announced[:2] == ["medium", "low"]
    observations, qualities = _recorded(db, adaptive_id)
    assert qualities[0] == 90 and 50 in qualities  # the quality in force, step by step
    assert qualities.index(75) < qualities.index(50)
    # the replay shows it step by step
    client = factory.client(designer)
    page = client.get(f"/api/episodes/{adaptive_id}/steps", params={"limit": 100}).json()
    assert [item["stream_quality"] for item in page["items"]] == qualities

    # Without adaptation, on the same seed and keys: no change, and the same observations.
    announced, fixed_id = _play(factory, designer, adaptive=False, lag_from=4)
    assert announced == []
    fixed_observations, fixed_qualities = _recorded(db, fixed_id)
    assert set(fixed_qualities) == {90}
    assert len(fixed_observations) == len(observations)
    assert all(np.array_equal(a, b) for a, b in zip(observations, fixed_observations, strict=True))
