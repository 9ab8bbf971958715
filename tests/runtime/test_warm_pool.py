"""Warm workers (server/runtime/warm_pool.py) with real worker processes: one is handed out
and replaced; a dead, a hung or a stale one (its runtime removed) is never handed out; the
pool stays within the process budget and gives room back to players."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from server.core.budget import ProcessBudget
from server.recording.format import episode_dir
from server.recording.writer import open_reader
from server.runtime import runtimes
from server.runtime.catalog import CATALOG
from server.runtime.warm_pool import WarmPool
from server.study_spec import EnvironmentSpec
from tests.runtime.conftest import ALLOWED, fake_spec, run

pytestmark = pytest.mark.database_plays_no_part


def _pool(**limits) -> WarmPool:
    options = {"per_env": 1, "max_total": 4, "max_age_s": 600.0, "idle_s": 600.0}
    return WarmPool(**{**options, "ping_timeout_s": 1.0, **limits})


async def _until(check, seconds: float = 60.0) -> None:
    """Until ``check()`` is true (a worker's start takes what it takes)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("not in time")
        await asyncio.sleep(0.02)


def _args(data_root: Path, study_id: int = 7) -> dict:
    return {"allowed": ALLOWED, "study_id": study_id, "data_root": data_root}


async def _warmed(pool: WarmPool, spec: EnvironmentSpec, data_root: Path, seconds=60.0):
    """``spec``'s environment wanted, and its warm worker ready: (its key, the worker)."""
    key = pool.want(spec, **_args(data_root))
    await _until(lambda: pool.ready(key) == 1, seconds)
    return key, pool._demand[key].ready[0].worker


def test_a_warm_worker_is_handed_out_plays_and_is_replaced(data_root):
    spec = fake_spec()

    async def scenario():
        pool = _pool()
        try:
            key, warm = await _warmed(pool, spec, data_root)
            taken = await pool.take(spec, **_args(data_root))
            assert taken is warm and taken.alive and pool.counts.handed_out == 1
            await _until(lambda: pool.ready(key) == 1)  # its replacement, started meanwhile
            replacement = pool._demand[key].ready[0].worker
            assert replacement.pid != taken.pid
            first = await taken.begin_episode("warm-1", seed=3)
            assert first.step == 0 and first.frame[:2] == b"\xff\xd8"
            event = await taken.send_input({"keys": ["KeyA"]})
            assert event is not None and event.step == 1
            await taken.end_episode("canceled")
            await taken.close()
            assert pool.counts.started == 2 and pool.counts.dropped == 0
        finally:
            await pool.close()
        assert not replacement.alive  # closed with the pool

    run(scenario())
    with open_reader(episode_dir(data_root, 7, "warm-1")) as reader:
        assert len(list(reader.steps)) == 2  # the warm worker recorded as any other


def test_a_session_asking_while_its_warm_worker_starts_waits_for_that_one(data_root):
    """The warm worker began starting before the session asked: the session gets it when it
    is ready instead of starting a second worker beside it."""
    spec = fake_spec()

    async def scenario():
        pool = _pool()
        try:
            key = pool.want(spec, **_args(data_root))
            assert pool.ready(key) == 0 and pool.size() == 1  # on its way
            taken = await pool.take(spec, **_args(data_root))
            assert taken is not None and taken.alive
            assert pool.counts.handed_out == 1 and pool.counts.started == 1
            await taken.close()
        finally:
            await pool.close()

    run(scenario())


def test_another_environment_gets_no_warm_worker_of_this_one(data_root):
    """A worker is only handed to a session that would have started the same one: another
    study, or other settings, starts its own."""
    spec = fake_spec()

    async def scenario():
        pool = _pool()
        try:
            key, _ = await _warmed(pool, spec, data_root)
            assert await pool.take(spec, **_args(data_root, study_id=8)) is None
            other = fake_spec(kwargs={"episode_len": 6})
            assert await pool.take(other, **_args(data_root)) is None
            assert pool.ready(key) == 1 and pool.counts.handed_out == 0
        finally:
            await pool.close()

    run(scenario())


@pytest.mark.parametrize("how", ["killed", "hung"])
def test_a_dead_or_hung_warm_worker_is_not_handed_out(data_root, how):
    spec = fake_spec()

    async def scenario():
        pool = _pool(ping_timeout_s=0.5)
        try:
            key, bad = await _warmed(pool, spec, data_root)
            assert bad.pid is not None
            os.kill(bad.pid, signal.SIGKILL if how == "killed" else signal.SIGSTOP)
            if how == "killed":
                await _until(lambda: not bad.alive)  # the pipe's end seen by the loop
            assert await pool.take(spec, **_args(data_root)) is None
            assert pool.counts.dropped == 1 and not bad.alive
            await _until(lambda: pool.ready(key) == 1)  # a new one started in its place
            fresh = await pool.take(spec, **_args(data_root))
            assert fresh is not None and fresh is not bad and fresh.alive
            await fresh.close()
        finally:
            await pool.close()

    run(scenario())


def test_the_sweep_drops_a_dead_and_an_aged_worker_and_starts_new_ones(data_root):
    spec = fake_spec()

    async def scenario():
        pool = _pool(max_age_s=600.0)
        try:
            key = pool.want(spec, **_args(data_root))
            await _until(lambda: pool.ready(key) == 1)
            first = pool._demand[key].ready[0]
            os.kill(first.worker.pid, signal.SIGKILL)
            await _until(lambda: not first.worker.alive)
            await pool.sweep()
            assert pool.counts.dropped == 1
            await _until(lambda: pool.ready(key) == 1)
            second = pool._demand[key].ready[0]
            pool.max_age_s = 0.0  # now older than that
            await pool.sweep()
            assert pool.counts.dropped == 2 and not second.worker.alive
            pool.max_age_s = 600.0
            await pool.sweep()
            await _until(lambda: pool.ready(key) == 1)
            pool.idle_s = 0.0  # nobody asked for it since
            await pool.sweep()
            assert pool.size() == 0 and key not in pool._demand
        finally:
            await pool.close()

    run(scenario())


def test_warm_workers_stay_within_the_process_budget_and_give_way_to_players(data_root):
    """Two worker processes in all: two environments wanted two warm workers each, two
    start; background work finds no room; a player's cold start has one closed for it."""
    players = []  # stands for the players' workers (the registry's count)
    pool = _pool(per_env=2, max_total=8)
    in_use = lambda: len(players) + pool.size()  # noqa: E731
    budget = ProcessBudget(max_workers=2, max_background=2, queue=0, wait_s=0, players=in_use)
    pool.room = lambda: 2 - len(players) - budget.in_use - pool.size()
    one, two = fake_spec(), fake_spec(kwargs={"episode_len": 6})

    async def scenario():
        try:
            pool.want(one, **_args(data_root))
            pool.want(two, **_args(data_root))
            assert pool.size() == 2  # two being started, no more
            await _until(lambda: pool.ready() == 2)
            assert pool.counts.started == 2 and not budget.try_take()
            players.append("a player of another study, started cold")
            other = fake_spec(kwargs={"episode_len": 7})
            assert await pool.take(other, **_args(data_root)) is None
            assert pool.size() == 1 and pool.counts.dropped == 1  # room made for the player
            players.append("and another one")
            await pool.sweep()  # overdrawn: the last warm one goes too
            assert pool.size() == 0 and pool.counts.dropped == 2
            players.clear()
            await pool.sweep()  # room again: topped up, within the budget
            assert pool.size() == 2
            await _until(lambda: pool.ready() == 2)
        finally:
            await pool.close()
        assert pool.size() == 0

    run(scenario())


def test_a_worker_of_a_runtime_removed_while_warm_is_not_handed_out(tmp_path, monkeypatch):
    """PickCube's worker runs in the robotics runtime; the runtime's venv is taken away
    while one is warm: that worker is not handed out (nor is a new one started: the
    runtime is missing), and the session's own start says why."""
    real = runtimes.RUNTIMES["robotics"].venv
    if not runtimes.state("robotics").ok:
        pytest.fail("the robotics runtime is needed: run `make runtimes`")
    root = tmp_path / "runtimes"
    root.mkdir()
    (root / "robotics").symlink_to(real, target_is_directory=True)
    runtimes.forget()
    monkeypatch.setattr(runtimes, "_ROOT", root)
    entry = CATALOG["PickCube"]
    spec = EnvironmentSpec(id="cube", name="PickCube", source=entry.source(), mode="sync")
    data_root = tmp_path / "data"

    async def scenario():
        pool = _pool()
        try:
            key, warm = await _warmed(pool, spec, data_root, 120)
            (root / "robotics").unlink()  # removed (an operator's rm -rf, a reinstall's swap)
            assert await pool.take(spec, **_args(data_root)) is None
            assert pool.counts.dropped == 1 and not warm.alive
            await _until(lambda: pool.counts.failed == 1, 30)  # its replacement cannot start
            assert pool.size() == 0
        finally:
            await pool.close()

    try:
        run(scenario())
    finally:
        runtimes.forget()
