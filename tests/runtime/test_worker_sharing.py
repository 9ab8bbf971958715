"""Several play sessions in one worker process (``sessions_per_worker``): who joins whom, and
that each session keeps its own episode whatever happens to the others."""

from __future__ import annotations

import asyncio
import os
import signal

import numpy as np
import pytest

from server.recording.format import episode_dir
from server.recording.writer import open_reader
from server.runtime import EnvWorker, WorkerClosed, worker_process
from tests.runtime.conftest import ALLOWED, fake_spec, log_holds, run


async def _start(spec, data_root, per_worker=4, study=7):
    return await EnvWorker.start(spec, allowed=ALLOWED, study_id=study, data_root=data_root,
                                 timeout=20, sessions_per_worker=per_worker)  # fmt: skip


async def _measured(spec, data_root, **kw):
    """A first session playing async long enough for its environment's cost to be known."""
    first = await _start(spec, data_root, **kw)
    await first.begin_episode("first", 0)
    await _steps(first, spec.fps * worker_process.COST_WINDOW_S + 20)
    return first


async def _steps(worker, n):
    """Until ``worker``'s async clock has sent ``n`` more step events."""
    got = 0
    async for _ in worker.events():
        got += 1
        if got >= n:
            return


def _async_spec(fps=60):
    return fake_spec(kwargs={"episode_len": 100_000}, mode="async", fps=fps)


def test_light_sessions_share_a_process_and_keep_their_own_episodes(data_root, no_leaks):
    # at 20 fps a step may take 4 ms of a busy core and still count as light (PACK_BUSY)
    async def scenario():
        first = await _measured(_async_spec(fps=20), data_root)
        others = [await _start(_async_spec(fps=20), data_root) for _ in range(4)]
        pids = [first.pid, *(w.pid for w in others)]
        for i, w in enumerate(others[:3]):
            await w.begin_episode(f"joined{i}", i + 1)
            await w.send_input({"keys": ["KeyB"]})
        for w in others[:3]:  # each joined episode has stepped a few times
            await _steps(w, 8)
        steps = {}
        for i, w in enumerate([first, *others[:3]]):
            summary = await w.end_episode("completed")
            steps[f"joined{i - 1}" if i else "first"] = summary["num_steps"]
        # closing one session leaves the others' process running
        await others[0].close()
        assert others[1].alive and await others[1].ping() is None
        for w in [first, *others[1:]]:
            await w.close()
        return pids, steps

    pids, steps = run(scenario())
    # four sessions in the first process (the cap), the fifth in a process of its own
    assert pids[:4] == [pids[0]] * 4 and pids[4] != pids[0]
    for episode_id, count in steps.items():
        with open_reader(episode_dir(data_root, 7, episode_id)) as reader:
            recorded = list(reader.steps)
        assert len(recorded) == count > 5
        seed = 0 if episode_id == "first" else int(episode_id[-1]) + 1
        # each session's fake env keeps its own state: its observations count from its seed
        assert all(np.all(s.timestep.observation == i + seed) for i, s in enumerate(recorded))
    no_leaks()


def test_no_sharing_before_the_cost_is_known_nor_across_studies_nor_when_heavy(
    data_root, no_leaks, monkeypatch
):
    async def scenario():
        a = await _start(_async_spec(), data_root)
        b = await _start(_async_spec(), data_root)  # a's cost is not measured yet
        first = await _measured(_async_spec(), data_root, study=8)
        other_study = await _start(_async_spec(), data_root, study=9)
        single = await _start(_async_spec(), data_root, study=8, per_worker=1)
        # an environment costing more than PACK_BUSY / 2 of a core never doubles up
        monkeypatch.setattr(worker_process, "PACK_BUSY", 0.0)
        heavy = await _start(_async_spec(), data_root, study=8)
        pids = [w.pid for w in (a, b, first, other_study, single, heavy)]
        for w in (a, b, first, other_study, single, heavy):
            await w.close()
        return pids

    pids = run(scenario())
    assert len(set(pids)) == len(pids)
    no_leaks()


def test_a_killed_process_ends_every_session_in_it_and_each_log_stays_readable(data_root, no_leaks):
    async def scenario():
        first = await _measured(_async_spec(fps=20), data_root)
        second = await _start(_async_spec(fps=20), data_root)
        pid = first.pid
        assert second.pid == pid
        await second.begin_episode("second", 5)
        for episode_id in ("first", "second"):  # both play; the logs flush every 0.2 s
            await log_holds(episode_dir(data_root, 7, episode_id), 11)
        os.kill(pid, signal.SIGKILL)
        for w in (first, second):
            with pytest.raises(WorkerClosed):
                for _ in range(100):
                    await w.ping()
                    await asyncio.sleep(0.05)
            assert not w.alive
            await w.close()
        # a new session after the death gets a new process
        third = await _start(_async_spec(), data_root)
        assert third.pid != pid
        await third.close()

    run(scenario())
    for episode_id in ("first", "second"):
        with open_reader(episode_dir(data_root, 7, episode_id)) as reader:
            assert len(list(reader.steps)) > 10
    no_leaks()


def test_sessions_of_one_process_tick_together_and_processes_apart(data_root):
    """The async clocks of a process's sessions at one pace sit on one grid, so one wake-up
    steps them all, whenever each started or resumed; another process has another phase."""
    import time

    from server.runtime.adapters import build_adapter
    from server.runtime.hosted_env import EpisodeLogs, HostedEnv, grid_phase

    class Dropped:
        def send(self, message):
            pass

    spec = _async_spec()
    sessions = [HostedEnv(Dropped(), spec, build_adapter(spec.source, ALLOWED),
                          EpisodeLogs("7", data_root, 0.2), ALLOWED) for _ in range(3)]  # fmt: skip
    period = 1 / 60
    try:
        for i, session in enumerate(sessions):
            session.begin_episode({"episode_id": f"e{i}", "seed": i})
            time.sleep(period * 0.37)  # joins at another moment of the period
        sessions[2].handle("pause", {})
        time.sleep(period * 0.5)
        sessions[2].handle("resume", {})
        ticks = [s.next_tick for s in sessions]
        # on one grid: whole periods apart (a later start may be a period later)
        for tick in ticks[1:]:
            slots = (tick - ticks[0]) / period
            assert abs(slots - round(slots)) < 1e-6, ticks
        for session in sessions:  # every tick stays on it
            session.tick()
            session.tick()
        steps = [(s.next_tick - ticks[0]) / period for s in sessions]
        assert all(abs(x - round(x)) < 1e-6 for x in steps), steps
        offset = abs((ticks[0] / period) % 1 - grid_phase(os.getpid()))
        assert min(offset, 1 - offset) < 1e-6  # this process's phase
        # the processes of a burst of players (consecutive pids) wake apart
        phases = sorted(grid_phase(pid) for pid in range(4000, 4008))
        assert min(b - a for a, b in zip(phases, phases[1:], strict=False)) > 0.05
    finally:
        for session in sessions:
            session.end_episode({"reason": "completed"})
            session.env.close()
