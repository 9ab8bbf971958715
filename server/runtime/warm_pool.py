"""Warm workers: environment workers started and built before a player asks for one, so
that a participant's ready gate opens at once (``docs/runtime.md``, "Warm workers").

A worker's start is what a player waits for before the first frame: a fork of the app's
forkserver and the environment's build (tens of milliseconds for a game), or a new
interpreter in a runtime that imports its suite (Robosuite: about 7 s on this machine). The
pool keeps up to ``per_env`` workers per environment *in demand* started and built (an
``open``-ed slot, its ``ready`` received), at most ``max_total`` in all and only while
``room()`` says the process budget has one more worker free: :meth:`want` says an
environment is in demand (a player's session opened), :meth:`take` hands one out to the
session that starts (and starts its replacement in the background).

An environment is the worker's whole identity (:func:`worker_process.environment_key`: the
study, the spec, the data root, the flush interval and the allow-list), so a warm worker is
only ever handed to a session that would have started the very same one. Never handed out:
a worker whose process died, one older than ``max_age_s``, one of a runtime whose venv
changed on disk since it started (removed, reinstalled: :func:`runtimes.fingerprint`), and
one that does not answer a ping within ``ping_timeout_s`` (a hung one: the ping kills it).
Those are closed and replaced; :meth:`sweep` (every few seconds, :meth:`run`) does the same
for the idle ones, closes the warm workers of an environment nobody wanted for ``idle_s``,
and gives room back to players when the budget is overdrawn (players come first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.recording.writer import FLUSH_INTERVAL_S
from server.runtime import runtimes, worker_process
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.catalog import runtime_of
from server.runtime.worker import EnvWorker, WorkerError
from server.study_spec import EnvironmentSpec

log = logging.getLogger(__name__)
FAILED_BACKOFF_S = 60.0  # an environment whose warm start failed is not warmed again sooner
# A replacement starts this long after its worker was handed out: a runtime's interpreter
# start is seconds of CPU, which would otherwise compete with the ready gate it just served
# (PickCube's first frame took 3 s beside it on the loaded 2-core machine, 1 s without).
REFILL_DELAY_S = 3.0
CLOSE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class _Start:
    """What :meth:`EnvWorker.start` is given for one environment."""

    spec: EnvironmentSpec
    allowed: AllowedEnvironments
    study_id: int | str
    data_root: Path | str
    timeout: float = 60.0
    reply_timeout: float = 10.0
    flush_interval_s: float = FLUSH_INTERVAL_S

    @property
    def runtime(self) -> str:
        return runtime_of(self.spec.source)

    @property
    def key(self) -> Any:
        return worker_process.environment_key(
            str(self.study_id),
            self.spec.model_dump_json(),
            str(self.data_root),
            self.flush_interval_s,
            self.allowed,
        )


@dataclass
class _Warm:
    worker: EnvWorker
    runtime: str
    born: float
    fingerprint: Any  # the runtime's venv on disk when it started


@dataclass
class Counts:
    """What the pool did (``/api/health``-style figures for tests and benchmarks)."""

    started: int = 0
    handed_out: int = 0
    dropped: int = 0  # closed unused: dead, hung, aged, stale, idle, or for a player's room
    failed: int = 0


@dataclass
class _Demand:
    start: _Start
    wanted_at: float
    ready: list[_Warm] = field(default_factory=list)
    starting: int = 0
    failed_at: float | None = None
    # set when a start of it ends (ready, or failed): a session waits on it for a warm
    # worker already on its way rather than start a second one beside it
    settled: asyncio.Event = field(default_factory=asyncio.Event)


class WarmPool:
    """Started, environment-built workers waiting for the sessions that will ask for them."""

    def __init__(
        self,
        *,
        per_env: int,
        max_total: int,
        max_age_s: float,
        idle_s: float,
        ping_timeout_s: float,
        room: Callable[[], int] = lambda: 1,
    ) -> None:
        self.per_env = per_env
        self.max_total = max_total
        self.max_age_s = max_age_s
        self.idle_s = idle_s
        self.ping_timeout_s = ping_timeout_s
        self.room = room  # worker processes the budget has free, warm ones counted as used
        self.counts = Counts()
        self._demand: dict[Any, _Demand] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def enabled(self) -> bool:
        return self.per_env > 0 and self.max_total > 0 and not self._closed

    def size(self) -> int:
        """Warm workers held or being started (read from request threads too: a snapshot)."""
        demands = list(self._demand.values())
        return sum(len(d.ready) + d.starting for d in demands)

    def ready(self, key: Any = None) -> int:
        """Warm workers ready to hand out (of one environment key, when given)."""
        demands = [self._demand[key]] if key in self._demand else []
        return sum(len(d.ready) for d in (demands if key is not None else self._demand.values()))

    # -- asking -----------------------------------------------------------------------------
    def want(
        self,
        spec: EnvironmentSpec,
        *,
        allowed: AllowedEnvironments,
        study_id: int | str,
        data_root: Path | str,
        timeout: float = 60.0,
        reply_timeout: float = 10.0,
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> Any:
        """Say ``spec``'s environment is in demand: warm workers for it are started in the
        background (within the limits). Its key is returned. Never blocks, never raises."""
        start = _Start(spec, allowed, study_id, data_root, timeout, reply_timeout, flush_interval_s)
        key = start.key
        if not self.enabled:
            return key
        demand = self._demand.get(key)
        if demand is None:
            demand = self._demand[key] = _Demand(start, time.monotonic())
        demand.wanted_at = time.monotonic()
        self._fill(key)
        return key

    async def take(self, spec: EnvironmentSpec, **start: Any) -> EnvWorker | None:
        """A warm worker of ``spec``'s environment (``start``: :meth:`want`'s arguments) that
        is alive, fresh and answers, or None (start one yourself). Either way the environment
        is in demand from now on, and its warm workers are topped up in the background."""
        demand = self._demand.get(_Start(spec, **start).key)
        on_its_way = demand is not None and not demand.ready and demand.starting > 0
        key = self.want(spec, **start)
        demand = self._demand.get(key)
        if on_its_way and demand is not None:
            await self._settled(demand)
        while demand is not None and demand.ready:
            warm = demand.ready.pop(0)
            if await self._usable(warm):
                self.counts.handed_out += 1
                asyncio.get_running_loop().call_later(REFILL_DELAY_S, self._fill, key)
                return warm.worker
            await self._drop(warm, "unusable")
        if self.enabled and self.room() < 1:
            await self._make_room()  # the player's cold start comes first
        self._fill(key)
        return None

    async def _settled(self, demand: _Demand) -> None:
        """Until one of ``demand``'s starts under way ends (it began before this session
        asked, so it is ready sooner than a start of the session's own would be)."""
        demand.settled.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(demand.start.timeout):
                while not demand.ready and demand.starting:
                    await demand.settled.wait()
                    demand.settled.clear()

    # -- keeping ----------------------------------------------------------------------------
    async def _usable(self, warm: _Warm) -> bool:
        if not self._fresh(warm):
            return False
        try:
            await warm.worker.ping(timeout=self.ping_timeout_s)  # hung: killed by the ping
        except WorkerError:
            return False
        return warm.worker.alive

    def _fresh(self, warm: _Warm) -> bool:
        """Alive, young enough, and of the runtime's venv as it is on disk now."""
        if not warm.worker.alive or time.monotonic() - warm.born > self.max_age_s:
            return False
        return runtimes.fingerprint(warm.runtime) == warm.fingerprint

    async def _drop(self, warm: _Warm, why: str) -> None:
        self.counts.dropped += 1
        log.info("warm worker dropped (%s)", why)
        with contextlib.suppress(Exception):
            await warm.worker.close(timeout=CLOSE_TIMEOUT_S)

    async def _make_room(self) -> None:
        """Close the oldest idle warm worker (a player needs its place in the budget)."""
        held = [(w.born, key, w) for key, d in self._demand.items() for w in d.ready]
        if held:
            _, key, warm = min(held, key=lambda item: item[0])
            self._demand[key].ready.remove(warm)
            await self._drop(warm, "room for a player")

    def _fill(self, key: Any) -> None:
        demand = self._demand.get(key)
        if demand is None or not self.enabled:
            return
        if demand.failed_at is not None and time.monotonic() - demand.failed_at < FAILED_BACKOFF_S:
            return
        while (
            len(demand.ready) + demand.starting < self.per_env
            and self.size() < self.max_total
            and self.room() >= 1
        ):
            demand.starting += 1
            task = asyncio.get_running_loop().create_task(self._start(key, demand))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _start(self, key: Any, demand: _Demand) -> None:
        s = demand.start
        try:
            fingerprint = runtimes.fingerprint(s.runtime)
            worker = await self._started(s)
            if worker is None:
                self.counts.failed += 1
                demand.failed_at = time.monotonic()
                return
            self.counts.started += 1
            warm = _Warm(worker, s.runtime, time.monotonic(), fingerprint)
            if self._closed or self._demand.get(key) is not demand:
                await self._drop(warm, "no longer wanted")
                return
            demand.failed_at = None
            demand.ready.append(warm)
        finally:
            demand.starting -= 1
            demand.settled.set()

    @staticmethod
    async def _started(s: _Start) -> EnvWorker | None:
        """A worker of ``s`` started, built and one frame drawn (not recorded: the
        renderer's context, shaders and caches are made now, not at the ready gate; an
        episode's reset reseeds from its own seed, as every episode but a worker's first
        does), or None when it cannot be now (the session's own start will say why)."""
        try:
            worker = await EnvWorker.start(
                s.spec,
                allowed=s.allowed,
                study_id=s.study_id,
                data_root=s.data_root,
                timeout=s.timeout,
                reply_timeout=s.reply_timeout,
                flush_interval_s=s.flush_interval_s,
            )
        except Exception as exc:
            log.info("warm worker for %s not started: %s", s.spec.name, exc)
            return None
        try:
            await worker.preview(seed=0)
        except Exception as exc:
            log.info("warm worker for %s did not draw: %s", s.spec.name, exc)
            await worker.close(timeout=CLOSE_TIMEOUT_S)
            return None
        return worker

    async def sweep(self) -> None:
        """Drop what may not be handed out, forget environments nobody wanted for
        ``idle_s``, give room back to players, and top the rest up."""
        now = time.monotonic()
        for key, demand in list(self._demand.items()):
            for warm in [w for w in demand.ready if not self._fresh(w)]:
                demand.ready.remove(warm)
                await self._drop(warm, "dead, aged or of a changed runtime")
            if now - demand.wanted_at > self.idle_s:
                for warm in list(demand.ready):
                    demand.ready.remove(warm)
                    await self._drop(warm, "idle")
                if not demand.starting:
                    del self._demand[key]
        while self.room() < 0 and self.ready():
            await self._make_room()
        for key in list(self._demand):
            self._fill(key)

    async def run(self, every_s: float) -> None:
        """:meth:`sweep` every ``every_s`` until cancelled (the app's lifespan task)."""
        while True:
            await asyncio.sleep(every_s)
            try:
                await self.sweep()
            except Exception:  # the pool must not stop: the next sweep tries again
                log.exception("warm worker sweep failed")

    async def close(self) -> None:
        """Close every warm worker; none is started or handed out afterwards."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for demand in self._demand.values():
            for warm in demand.ready:
                await self._drop(warm, "shutdown")
            demand.ready.clear()
        self._demand.clear()
