"""The adaptive stream: quality follows the player's link, the recording does not."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time

import numpy as np

from server.models import Episode
from server.player.adaptive import LAG_MS, RAISE_AFTER_S, WINDOW_MS, QualityController
from server.player.outbox import SLACK_MS, Frame, Outbox
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec


def _feed(ctl: QualityController, start_ms: float, seconds: float, delay_ms: float,
          dropped: int = 0) -> tuple[float, list[str]]:  # fmt: skip
    """An ack every 50 ms for ``seconds``; the levels it changed to."""
    changes, now = [], start_ms
    while now < start_ms + seconds * 1000:
        if ctl.on_ack(delay_ms, now, dropped):
            changes.append(ctl.level)
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


def test_the_controller_lowers_the_frame_rate_once_low_is_not_enough():
    ctl = QualityController("medium", max_every=3)
    now, _ = _feed(ctl, 0, 1.5, delay_ms=40)
    seen = []
    while len(seen) < 5:  # queueing: quality first, then fewer frames, never below 1 in 3
        now += 50
        if ctl.on_ack(40 + LAG_MS + 60, now, 0):
            seen.append((ctl.level, ctl.every))
        if now > 20_000:
            break
    assert seen == [("low", 1), ("low", 2), ("low", 3)]
    changes = []
    while len(changes) < 3 and now < 60_000:  # calm: the frames come back first, then quality
        now += 50
        if ctl.on_ack(40, now, 0):
            changes.append((ctl.level, ctl.every))
    assert changes == [("low", 2), ("low", 1), ("medium", 1)]
    assert QualityController("low").max_every == 1  # without min_stream_fps: every frame


def test_a_lagging_link_gets_fewer_frames_and_the_log_keeps_every_step(factory, designer, db):
    # async at 30 fps, already at low quality, may go down to 10 frames/s (every 3rd frame)
    env = counter_env(episode_len=100_000, mode="async", fps=30)
    env.update(image_quality="low", adaptive_quality=True, min_stream_fps=10)
    study = factory.study(designer, spec(env))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        episode = player.start()
        waiting: list[tuple[float, tuple]] = []
        started = time.monotonic()
        while time.monotonic() - started < 4.7:
            frame = player.frame()
            waiting.append((time.monotonic(), frame))
            # 1.2 s of prompt acks (the link's best), then each ack 0.3 s late (a queue)
            lag = 0.0 if time.monotonic() - started < 1.2 else 0.3
            while waiting and time.monotonic() - waiting[0][0] >= lag:
                _, (index, step, *_rest) = waiting.pop(0)
                player.send(type="ack", episode=index, step=step, drawn_ms=1e12 + step)
        player.send(type="cancel")
        player.until("episode_saved")
    everies = [m["stream_every"] for m in player.seen if m["type"] == "setting"]
    assert everies[:2] == [2, 3]
    with open_reader(db.get(Episode, episode["id"]).storage_path) as reader:
        steps = list(reader.steps)
    timings = [json.loads(s.custom_data["timing"]) for s in steps]
    assert all(s.custom_data["frame"] for s in steps)  # every step's frame is recorded
    skipped = {i for i, t in enumerate(timings) if t.get("streamed") is False}
    sent = {step for _, step, *_ in player.frames}
    assert skipped and not skipped & sent  # recorded, not streamed
    assert {3, 2} <= {t.get("stream_every") for t in timings}
    # the replay shows it step by step
    page = client.get(f"/api/episodes/{episode['id']}/steps", params={"limit": 500}).json()
    shown = {i["step"] for i in page["items"] if not i["streamed"]}
    assert shown and shown == skipped & {i["step"] for i in page["items"]}


def test_frames_are_ack_clocked_once_acks_come():
    # A link whose best ack delay is 40 ms at 60 frames/s holds ceil((40 + SLACK) / 16.7)
    # frames in flight; more wait in the outbox, where the newest replaces the oldest.
    async def scenario():
        box = Outbox(max_frames=2)
        box.frame(Frame(1, 1, b"1"))
        assert await box.get() == Frame(1, 1, b"1")  # no ack yet: no window
        box.clock(40.0, 1000 / 60)
        box.settle(1, 1)
        limit = box.window.limit
        assert limit == math.ceil((40 + SLACK_MS) / (1000 / 60))
        got = []
        for step in range(2, 2 + limit + 3):
            dropped = box.frame(Frame(1, step, b"x"))
            if dropped is None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.05):
                        got.append((await box.get()).step)
        assert got == list(range(2, 2 + limit))  # the window is full: the rest wait
        waiting = await _get_within(box, 0.05)
        assert waiting is None
        box.clock(45.0, 1000 / 60)
        box.settle(1, 2 + limit - 1)  # an ack settles its frame and all before it
        assert (await _get_within(box, 1)).step == 2 + limit + 1  # the newest two waited
        assert (await _get_within(box, 1)).step == 2 + limit + 2
        # a new episode's first steps are after the last one's
        box.frame(Frame(2, 0, b"y"))
        assert (await _get_within(box, 1)).episode == 2

    asyncio.run(scenario())


async def _get_within(box: Outbox, seconds: float):
    try:
        async with asyncio.timeout(seconds):
            return await box.get()
    except TimeoutError:
        return None
