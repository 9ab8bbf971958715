"""The worker process and its async facade: lifecycle, failures, modes, recording."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import numpy as np
import pytest

from server.recording.format import episode_dir
from server.recording.writer import open_reader
from server.runtime import EnvWorker, RemoteError, WorkerClosed, WorkerTimeout
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.autonomy import TRIAL_STEPS
from server.runtime.frames import MAX_FRAME_SIDE, MAX_OBSERVATION_BYTES
from tests.runtime.conftest import ALLOWED, fake_spec, log_holds, run
from tests.runtime.fake_envs import FACTORIES
from tests.runtime.fake_policies import ALLOWED as POLICIES


async def _start(spec, data_root, **kw):
    return await EnvWorker.start(
        spec, allowed=ALLOWED, study_id=7, data_root=data_root, timeout=20, **kw
    )


def test_sync_episode_records_every_step(data_root, no_leaks):
    async def scenario():
        w = await _start(fake_spec(kwargs={"episode_len": 3}), data_root)
        assert w.info["mode"] == "sync" and w.info["cameras"] == ["front", "top"]
        first = await w.begin_episode("ep1", seed=3)
        assert first.step == 0 and first.frame[:2] == b"\xff\xd8"
        events = [first]
        for keys in (["KeyA"], ["KeyB"], ["KeyA", "KeyB"]):
            events.append(await w.send_input({"keys": keys}, {"input_sent": 1.5}, [[0, 2, 3]]))
        assert events[-1].terminated and events[-1].end_reason == "terminated"
        assert [e.reward for e in events] == [0.0, 1.0, 2.0, 0.0]
        assert events[-1].return_ == 3.0
        summary = await w.end_episode("completed")  # already finalized: nothing open
        # naming the episode that ended on its own: its log's summary (what the app counts
        # when a cancel crossed the episode's last steps)
        named = await w.end_episode("canceled", "ep1")
        await w.close()
        return events, summary, named

    events, summary, named = run(scenario())
    assert summary is None
    # success: what the environment reported at its last step (the counter reports none)
    assert named == {"episode_id": "ep1", "end_reason": "terminated", "num_steps": 4,
                     "total_reward": 3.0, "ended_before": True, "success": None}  # fmt: skip
    with open_reader(episode_dir(data_root, 7, "ep1")) as reader:
        steps = list(reader.steps)
        meta = reader.metadata()
        end = list(reader.episode_metadata())
    assert meta["episode_id"] == "ep1" and meta["seed"] == 3 and meta["study_id"] == "7"
    assert end == [
        {"episode_id": "ep1", "end_reason": "terminated", "num_steps": 4, "total_reward": 3.0}
    ]
    assert len(steps) == 4
    assert steps[0].action is None
    assert [int(s.action) for s in steps[1:]] == [1, 2, 0]
    for i, step in enumerate(steps):
        # the fake env reuses its buffer: each recorded observation must keep its own value
        assert np.all(step.timestep.observation == i + 3)  # seed 3 → offset 3
        assert step.custom_data["frame"] == events[i].frame
    assert json.loads(steps[0].custom_data["input"]) is None
    assert json.loads(steps[1].custom_data["input"]) == {"keys": ["KeyA"]}
    timing = json.loads(steps[1].custom_data["timing"])
    assert timing["input_sent"] == 1.5 and timing["acks"] == [[0, 2, 3]] and "applied" in timing
    assert float(steps[-1].timestep.discount) == 0.0


def test_start_failures_are_reported(data_root, no_leaks):
    async def scenario():
        with pytest.raises(RemoteError) as err:
            await _start(fake_spec("broken_start"), data_root)
        assert err.value.kind == "RuntimeError" and "cannot build" in err.value.message
        assert "Traceback" in err.value.traceback
        with pytest.raises(RemoteError, match="not dm_env"):
            await _start(fake_spec("not_an_env"), data_root)
        with pytest.raises(WorkerTimeout):
            await EnvWorker.start(
                fake_spec("slow_start"),
                allowed=ALLOWED,
                study_id=1,
                data_root=data_root,
                timeout=1.0,
            )

    run(scenario())
    no_leaks()


def test_slow_step_times_out_and_kills_the_worker(data_root, no_leaks):
    async def scenario():
        spec = fake_spec(kwargs={"step_sleep": 5.0})
        w = await _start(spec, data_root, reply_timeout=0.5)
        await w.begin_episode("slow", 1)
        with pytest.raises(WorkerTimeout):
            await w.send_input({"keys": []})
        assert not w.alive
        with pytest.raises(WorkerClosed):
            await w.send_input({"keys": []})
        await w.close()

    run(scenario())
    no_leaks()


def test_crashing_env_fails_the_episode_and_keeps_its_steps(data_root, no_leaks):
    async def scenario():
        w = await _start(fake_spec(kwargs={"crash_at": 3, "episode_len": 9}), data_root)
        await w.begin_episode("crash", 0)
        await w.send_input({"keys": ["KeyA"]})
        await w.send_input({"keys": ["KeyA"]})
        with pytest.raises(RemoteError) as err:
            await w.send_input({"keys": ["KeyA"]})
        assert err.value.kind == "ValueError" and "boom" in err.value.message
        with pytest.raises(RemoteError, match="ProtocolError"):
            await w.send_input({"keys": ["KeyA"]})  # the episode is over
        await w.ping()  # the worker itself is fine
        await w.close()

    run(scenario())
    with open_reader(episode_dir(data_root, 7, "crash")) as reader:
        assert len(reader.steps) == 3
        assert list(reader.episode_metadata())[0]["end_reason"] == "failed"
    no_leaks()


def test_killed_worker_leaves_a_readable_log(data_root, no_leaks):
    async def scenario():
        w = await _start(fake_spec(kwargs={"episode_len": 1000}), data_root, flush_interval_s=0.1)
        await w.begin_episode("killed", 0)
        for _ in range(20):
            await w.send_input({"keys": ["KeyB"]})
        # idle: the worker flushes within its flush interval, with no step to prompt it
        await log_holds(episode_dir(data_root, 7, "killed"), 21)
        os.kill(w.pid, signal.SIGKILL)
        with pytest.raises(WorkerClosed):
            for _ in range(100):
                await w.ping()
                await asyncio.sleep(0.05)
        await w.close()

    run(scenario())
    with open_reader(episode_dir(data_root, 7, "killed")) as reader:
        steps = list(reader.steps)
    assert len(steps) == 21 and all(float(s.timestep.reward) == 2.0 for s in steps[1:])
    no_leaks()


def test_worker_exiting_mid_step_is_reported(data_root, no_leaks):
    async def scenario():
        w = await _start(fake_spec(kwargs={"exit_at": 2}), data_root)
        await w.begin_episode("exit", 0)
        await w.send_input({"keys": []})
        with pytest.raises(WorkerClosed):
            await w.send_input({"keys": []})
        await w.close()

    run(scenario())
    no_leaks()


def test_out_of_order_calls_and_use_after_close(data_root, no_leaks):
    async def scenario():
        w = await _start(fake_spec(), data_root)
        with pytest.raises(RemoteError) as err:
            await w.send_input({"keys": ["KeyA"]})
        assert err.value.kind == "ProtocolError"
        assert await w.end_episode("nothing") is None
        with pytest.raises(RemoteError, match="unknown camera"):
            await w.set_camera("side")
        with pytest.raises(RemoteError):
            await w.set_speed(1000)
        await w.begin_episode("a", 1)
        await w.send_input({"keys": ["KeyA"]})
        second = await w.begin_episode("b", 2)  # replaces "a", which is finalized
        assert second.episode_id == "b" and second.step == 0
        summary = await w.end_episode("canceled")
        assert summary["end_reason"] == "canceled" and summary["num_steps"] == 1
        assert await w.end_episode("canceled") is None  # safe twice
        await w.close()
        await w.close()  # safe twice
        for call in (w.ping(), w.begin_episode("c", 1), w.send_input({}), w.pause()):
            with pytest.raises(WorkerClosed):
                await call

    run(scenario())
    with open_reader(episode_dir(data_root, 7, "a")) as reader:
        assert list(reader.episode_metadata())[0]["end_reason"] == "replaced"
    no_leaks()


def test_camera_quality_and_max_steps(data_root, no_leaks):
    async def scenario():
        w = await _start(fake_spec(kwargs={"episode_len": 100}, max_steps=3), data_root)
        first = await w.begin_episode("cam", 0)
        await w.set_camera("top")
        await w.set_quality("high")
        ev = await w.send_input({"keys": []})
        assert ev.frame != first.frame
        await w.set_quality("low")
        await w.send_input({"keys": []})
        last = await w.send_input({"keys": []})
        await w.close()
        return last

    last = run(scenario())
    assert last.truncated and not last.terminated and last.end_reason == "max_steps"
    with open_reader(episode_dir(data_root, 7, "cam")) as reader:
        steps = list(reader.steps)
    assert len(steps) == 4 and float(steps[-1].timestep.discount) == 1.0
    no_leaks()


def test_async_clock_pushes_events_with_pause_resume_and_speed(data_root, no_leaks):
    async def scenario():
        spec = fake_spec(kwargs={"episode_len": 10_000}, mode="async", fps=50, max_steps=40)
        w = await _start(spec, data_root)
        await w.begin_episode("clock", 0)
        assert await w.send_input({"keys": ["KeyB"]}, {"input_sent": 5.0}) is None
        seen = []
        events = w.events()
        async for ev in events:
            seen.append(ev)
            if len(seen) == 5:
                await w.pause()
                break
        await asyncio.sleep(0.2)  # a window of ten ticks: no step may come in it
        paused_backlog = w._events.qsize()
        await w.set_speed(4.0)
        await w.send_input({"keys": ["KeyA"]})
        await w.resume()
        async for ev in events:
            seen.append(ev)
            if ev.done:
                break
        await w.close()
        return seen, paused_backlog

    seen, backlog = run(scenario())
    assert backlog <= 2  # steps stopped while paused (at most the in-flight ones)
    assert [e.step for e in seen] == list(range(1, 41))
    assert seen[-1].end_reason == "max_steps" and seen[-1].truncated
    assert seen[0].reward == 2.0 and seen[-1].reward == 1.0
    with open_reader(episode_dir(data_root, 7, "clock")) as reader:
        steps = list(reader.steps)
    assert len(steps) == 41
    timings = [json.loads(s.custom_data["timing"]) for s in steps[1:]]
    assert timings[0]["input_sent"] == 5.0  # the input's own timing, on its first step only
    assert "input_sent" not in timings[1]
    no_leaks()


def test_async_env_error_reaches_the_event_stream(data_root, no_leaks):
    async def scenario():
        spec = fake_spec(kwargs={"crash_at": 3}, mode="async", fps=60)
        w = await _start(spec, data_root)
        await w.begin_episode("async-crash", 0)
        seen = []
        with pytest.raises(RemoteError, match="boom"):
            async for ev in w.events():
                seen.append(ev.step)
        await w.close()
        return seen

    assert run(scenario()) == [1, 2]
    no_leaks()


def test_many_workers_start_and_stop_without_leaks(data_root, no_leaks):
    async def scenario():
        for _ in range(3):
            workers = await asyncio.gather(*(_start(fake_spec(), data_root) for _ in range(4)))
            await asyncio.gather(*(w.begin_episode(f"m{w.pid}", 1) for w in workers))
            pids = [w.pid for w in workers]
            await asyncio.gather(*(w.close() for w in workers))
            for pid in pids:
                with pytest.raises(ProcessLookupError):
                    os.kill(pid, 0)

    run(scenario())
    no_leaks()


def test_workers_yield_the_cpu_to_the_app(data_root, no_leaks):
    """Workers run niced, so a saturated machine slows their clocks, not the app."""
    from server.runtime.hosted_env import WORKER_NICE

    async def scenario():
        w = await _start(fake_spec(), data_root)
        try:
            return os.getpriority(os.PRIO_PROCESS, w.pid)
        finally:
            await w.close()

    assert run(scenario()) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE)


def test_preview_resets_without_recording_and_not_during_an_episode(data_root, no_leaks):
    async def scenario():
        worker = await EnvWorker.start(
            fake_spec(), allowed=ALLOWED, study_id="s", data_root=data_root, timeout=30
        )
        try:
            preview = await worker.preview(3, [{"keys": ["KeyA"]}, {"keys": ["KeyB"]}, {}])
            assert preview["frame"][:2] == b"\xff\xd8"
            assert [json.loads(a) for a in preview["actions"]] == [1, 2, 0]
            assert not (data_root / "studies").exists()  # nothing recorded
            await worker.begin_episode("ep", 1)
            with pytest.raises(RemoteError, match="an episode is running"):
                await worker.preview()
        finally:
            await worker.close()

    run(scenario())
    no_leaks()


def test_a_policy_trial_drives_unrecorded_and_not_during_an_episode(data_root, no_leaks):
    allowed = AllowedEnvironments.of((), FACTORIES, POLICIES, policy_budget_ms=1000)

    async def scenario():
        plain = await EnvWorker.start(
            fake_spec(), allowed=allowed, study_id="s", data_root=data_root, timeout=30
        )
        try:
            assert await plain.policy_trial(1) is None  # no policy: nothing to time
        finally:
            await plain.close()
        helped = fake_spec(policy={"id": "gives-two"}, kwargs={"episode_len": 3})
        worker = await EnvWorker.start(
            helped, allowed=allowed, study_id="s", data_root=data_root, timeout=30
        )
        try:
            trial = await worker.policy_trial(1)  # episodes of 3 steps: reset on the way
            assert trial["steps"] == TRIAL_STEPS and trial["error"] is None
            assert not (data_root / "studies").exists()  # nothing recorded
            await worker.begin_episode("ep", 1)
            with pytest.raises(RemoteError, match="an episode is running"):
                await worker.policy_trial(1)
        finally:
            await worker.close()

    run(scenario())
    no_leaks()


def _on_loop(loop: str, coro):
    """Run ``coro`` on the standard event loop or on uvloop (what uvicorn serves with)."""
    if loop == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return run(coro)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_large_frames_and_commands_cross_the_pipe_at_any_pace(data_root, no_leaks, loop, mode):
    """1024×1024 noise frames (about 1 MB of JPEG each, sent in many pieces) and a large
    command, on both event loops: nothing is mistaken for a dead worker, at a human's pace
    or flat out. (uvloop makes the watched descriptor non-blocking: a half-arrived message
    read with a blocking ``Connection.recv`` once killed every game whose frames were over
    16 KiB.)"""

    async def scenario():
        spec = fake_spec("big_frame", mode=mode, fps=30)
        w = await _start(spec, data_root)
        # a command of about 700 KB: 40 inputs holding many keys nothing is bound to
        inputs = [{"keys": ["KeyA", *(f"Key{i}" for i in range(2000))]}] * 40
        preview = await w.preview(seed=1, inputs=inputs)
        assert len(preview["actions"]) == len(inputs) and len(preview["frame"]) > 500_000
        first = await w.begin_episode(f"big-{mode}", seed=2)
        frames = [first.frame]
        if mode == "sync":
            for i in range(12):
                event = await w.send_input({"keys": ["KeyA"]})
                frames.append(event.frame)
                await asyncio.sleep(0.25 if i < 3 else 0)  # human pace, then flat out
        else:
            await w.send_input({"keys": ["KeyB"]})
            async for event in w.events():
                frames.append(event.frame)
                if len(frames) == 13:
                    break
        summary = await w.end_episode("completed")
        await w.close()
        return frames, summary

    frames, summary = _on_loop(loop, scenario())
    assert all(len(f) > 500_000 and f[:2] == b"\xff\xd8" for f in frames)
    assert len(set(frames)) == len(frames)  # fresh noise: every frame is its own
    with open_reader(episode_dir(data_root, 7, f"big-{mode}")) as reader:
        steps = list(reader.steps)
    assert len(steps) == summary["num_steps"] >= 13
    assert [s.custom_data["frame"] for s in steps[:13]] == frames
    assert steps[1].timestep.observation.shape == (1024, 1024, 3)
    no_leaks()


def test_frames_and_observations_over_the_limits_fail_clearly(data_root, no_leaks):
    """Past MAX_FRAME_SIDE or MAX_OBSERVATION_BYTES: a clear error at validation (the probe
    previews) and a failed episode with the same message, never a hang."""
    from server.runtime import probe

    too_wide = fake_spec("big_frame", kwargs={"size": MAX_FRAME_SIDE + 8})
    (where, message), *_ = run(probe.probe(too_wide, ALLOWED, data_root=data_root, timeout=30))
    assert where == ("source",)
    assert f"renders {MAX_FRAME_SIDE + 8}×{MAX_FRAME_SIDE + 8} frames" in message
    assert f"at most {MAX_FRAME_SIDE}×{MAX_FRAME_SIDE}" in message

    side = int((MAX_OBSERVATION_BYTES / 3) ** 0.5) + 8  # an observation just over the limit
    too_heavy = fake_spec("big_frame", kwargs={"size": side})
    (where, message), *_ = run(probe.probe(too_heavy, ALLOWED, data_root=data_root, timeout=30))
    assert "observation is" in message and f"at most {MAX_OBSERVATION_BYTES >> 20} MiB" in message

    async def mid_episode():
        w = await _start(too_wide, data_root)
        try:
            with pytest.raises(RemoteError) as err:
                await w.begin_episode("wide", seed=0)
            assert err.value.kind == "TooLarge"
            await w.ping()  # the worker itself goes on
        finally:
            await w.close()

    run(mid_episode())
    with open_reader(episode_dir(data_root, 7, "wide")) as reader:
        assert len(reader.steps) == 0  # closed, with nothing that could not be shown
    no_leaks()


@pytest.mark.parametrize("step_on_input", [True, False])
def test_step_on_input_brings_a_slots_step_forward_and_keeps_the_pace(
    data_root, no_leaks, step_on_input
):
    # 1 step per 10 s (fps 1 at speed 0.1): with step_on_input a key press steps at once,
    # a second press in the same slot waits for the next slot; without, nothing steps early.
    async def scenario():
        spec = fake_spec(kwargs={"episode_len": 10_000}, mode="async", fps=1, speed=0.1,
                         step_on_input=step_on_input)  # fmt: skip
        w = await _start(spec, data_root)
        await w.begin_episode("early", 0)
        await w.set_speed(0.1)
        seen = []

        async def collect():
            async for ev in w.events():
                seen.append(ev)

        async def count_after(seconds, at_least):
            for _ in range(int(seconds / 0.05)):
                if len(seen) >= at_least:
                    break
                await asyncio.sleep(0.05)
            return len(seen)

        collector = asyncio.create_task(collect())
        await w.send_input({"keys": ["KeyB"]}, {"input_sent": 1.0})
        first = await count_after(5, 1)
        await w.send_input({"keys": ["KeyA"]}, {"input_sent": 2.0})
        second = await count_after(1, first + 1)
        collector.cancel()
        await w.close()
        return seen[0] if first else None, second - first

    first, more = run(scenario())
    assert more == 0  # one step per slot: the second input waits for the next slot
    if not step_on_input:
        assert first is None
        no_leaks()
        return
    assert first is not None and first.step == 1
    with open_reader(episode_dir(data_root, 7, "early")) as reader:
        steps = list(reader.steps)
    assert len(steps) == 2  # the reset and the one early step
    timing = json.loads(steps[1].custom_data["timing"])
    assert timing["input_sent"] == 1.0 and json.loads(steps[1].custom_data["input"]) == {
        "keys": ["KeyB"]
    }
    no_leaks()
