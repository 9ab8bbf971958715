"""The app's side of worker processes: one process, its slots, and which process a new
hosted env joins (see :mod:`server.runtime._child_loop` for the process's side).

A hosted env (:class:`server.runtime.worker.EnvWorker`) lives in a *slot* of a
:class:`WorkerProcess`. By default every hosted env has a process of its own. With
``sessions_per_worker`` above 1 (``STUDIO_SESSIONS_PER_WORKER``), a session of a light
environment joins a process that already runs hosted envs of the same study and environment,
so they share its wake-ups, its interpreter and its caches (``docs/runtime.md``, "Several
sessions per worker"): only once the environment's cost is measured (the ``work_ms`` of its
steps), and only while the process's hosted envs together stay under :data:`PACK_BUSY` of a
core. The price: a process that dies or is killed (a stuck environment) ends every hosted env
in it; each keeps its recorded steps, as a single one does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import socket
import time
from collections.abc import AsyncIterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from server.runtime import runtimes
from server.runtime._child_loop import worker_main
from server.runtime._wire import WORK_MS, Wire, frame_message, settle
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.errors import RemoteError, WorkerClosed

# forkserver: the server process pre-imports the runtime once, so each worker starts by a
# cheap fork of a clean, thread-free process (spawn re-imports numpy/gymnasium per worker).
START_METHOD = "forkserver"
_PRELOAD = ["server.runtime._child_loop"]
# A hosted env joins a process only while the process's hosted envs, the new one included, use
# at most this share of one core (measured step time × a margin for the recording, which
# ``work_ms`` leaves out): a late tick of one hosted env is a late frame for all of them.
PACK_BUSY = 0.5
RECORDING_MARGIN = 1.5
COST_WINDOW_S = 2.0  # how often a process's cost per hosted env is re-measured


class Slot(Protocol):
    """What a process needs of a hosted env in one of its slots."""

    def on_message(self, kind: str, payload: Any) -> None: ...

    def on_dead(self) -> None: ...


def _context() -> Any:
    ctx = multiprocessing.get_context(START_METHOD)
    if START_METHOD == "forkserver":
        ctx.set_forkserver_preload(_PRELOAD)
    return ctx


# Environment key → measured share of a core per hosted env (RECORDING_MARGIN included).
_COSTS: dict[Any, float] = {}
# Environment key → its processes that may take another hosted env.
_POOL: dict[Any, list[WorkerProcess]] = {}


class WorkerProcess:
    """One worker process: its socket pair, its hosted envs' slots, the replies awaited."""

    def __init__(self, process: Any, key: Any) -> None:
        self.process = process
        self.key = key
        self.wire = Wire(self._dispatch, self._on_dead)
        self.loop = asyncio.get_running_loop()
        self.slots: dict[int, Slot] = {}
        self.slot_ids = itertools.count(1)
        self.rids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.pooled = False  # in _POOL: later hosted envs of its environment may join it
        self.dead = False
        self._window = (time.monotonic(), 0.0)  # start, work_ms summed since

    @classmethod
    async def start(cls, key: Any, allowed: AllowedEnvironments, study_id: str,
                    data_root: str, flush_interval_s: float,
                    runtime: str = runtimes.APP) -> WorkerProcess:  # fmt: skip
        """A new, empty worker process (its first ``open`` follows): forked from the app's
        forkserver, or in another runtime's interpreter (:mod:`server.runtime.runtimes`),
        which gets its arguments as the first message."""
        # A socket pair, as ``ctx.Pipe`` makes one: the worker's end is a blocking
        # Connection, the app's end belongs to the event loop (:class:`Wire`).
        parent, child_sock = socket.socketpair()
        child = Connection(child_sock.detach())
        args = (allowed, study_id, data_root, flush_interval_s)
        process: Any
        if runtime == runtimes.APP:
            process = _context().Process(
                target=worker_main, args=(child, *args), daemon=True,
                name=f"env-worker-{study_id}",
            )  # fmt: skip
        else:
            process = runtimes.RuntimeProcess(runtimes.RUNTIMES[runtime], child.fileno(),
                                              f"env-worker-{study_id}")  # fmt: skip
        # Starting a forkserver process blocks briefly (first use starts the server).
        try:
            await asyncio.to_thread(process.start)
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        worker = cls(process, key)
        try:
            parent.setblocking(False)
            await worker.loop.create_unix_connection(lambda: worker.wire, sock=parent)
            if runtime != runtimes.APP:
                worker.wire.transport.write(frame_message(args))
        except BaseException:
            parent.close()
            worker.kill()
            await worker.reap(1.0)
            raise
        return worker

    # -- slots ------------------------------------------------------------------------------
    def add(self, slot: Slot) -> int:
        """A new slot for ``slot`` (the ``open`` command is the caller's to send)."""
        slot_id = next(self.slot_ids)
        self.slots[slot_id] = slot
        return slot_id

    def release(self, slot_id: int) -> bool:
        """Forget a slot; True when it was the last (the process then exits and is reaped)."""
        self.slots.pop(slot_id, None)
        if self.slots:
            return False
        self._leave_pool()
        return True

    def _leave_pool(self) -> None:
        """No hosted env joins it any more (it is closing, or dead)."""
        if self.pooled:
            self.pooled = False
            _POOL[self.key].remove(self)

    # -- messages ---------------------------------------------------------------------------
    def send(self, slot_id: int, command: str, payload: Any, rid: int | None) -> None:
        assert self.wire.transport is not None
        self.wire.transport.write(frame_message((slot_id, command, payload, rid)))

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "reply":
            _, rid, ok, result = message
            future = self.pending.get(rid)
            if future is not None and not future.done():
                if ok:
                    future.set_result(result)
                else:
                    future.set_exception(RemoteError(*result))
            return
        slot = self.slots.get(message[1])
        if slot is not None:
            slot.on_message(kind, message[2])
        if kind == "event" and self.pooled:  # only a shared process's cost is needed
            self._measure(float(message[2][WORK_MS] or 0.0))

    def _measure(self, work_ms: float) -> None:
        start, total = self._window
        total += work_ms
        now = time.monotonic()
        if now - start < COST_WINDOW_S or not self.slots:
            self._window = (start, total)
            return
        share = total / 1000 / (now - start) / len(self.slots) * RECORDING_MARGIN
        _COSTS[self.key] = share
        self._window = (now, 0.0)

    def _on_dead(self) -> None:
        if self.dead:
            return
        self.dead = True
        self._leave_pool()
        error = WorkerClosed(f"the worker exited (code {self.process.exitcode})")
        for future in self.pending.values():
            if not future.done():
                future.set_exception(error)
                future.exception()  # mark retrieved: nobody may be waiting any more
        for slot in list(self.slots.values()):
            slot.on_dead()

    # -- the process ------------------------------------------------------------------------
    def kill(self) -> None:
        """Kill the process now (every hosted env in it ends)."""
        if self.process.is_alive():
            self.process.kill()
        self._on_dead()

    async def reap(self, timeout: float) -> None:
        """Wait for the process to exit, then terminate, then kill it; close the socket."""
        for stop, wait in ((None, timeout), ("terminate", 1.0), ("kill", 5.0)):
            if stop is not None and self.process.is_alive():
                getattr(self.process, stop)()
            if await self._exited(wait):
                break
        self._on_dead()
        if self.wire.transport is not None:
            self.wire.transport.abort()
        if not self.process.is_alive():  # else unkillable (D state): leave it to the OS
            self.process.join(0)
            self.process.close()

    async def _exited(self, timeout: float) -> bool:
        if not self.process.is_alive():
            return True
        done = self.loop.create_future()
        sentinel = self.process.sentinel
        self.loop.add_reader(sentinel, lambda: settle(done))
        try:
            await asyncio.wait_for(done, timeout)
        except TimeoutError:
            return not self.process.is_alive()
        finally:
            self.loop.remove_reader(sentinel)
        # With "spawn" the sentinel fires when the child's fds close, slightly before it can
        # be reaped: poll briefly instead of blocking the loop in join().
        for _ in range(200):
            if not self.process.is_alive():
                return True
            await asyncio.sleep(0.005)
        return False


def joinable(key: Any, sessions_per_worker: int) -> WorkerProcess | None:
    """A running process of environment ``key`` that a new hosted env may join, or None."""
    cost = _COSTS.get(key)
    if sessions_per_worker <= 1 or cost is None:
        return None
    candidates = [p for p in _POOL.get(key, [])  # live, not closing: _leave_pool
                  if p.loop is asyncio.get_running_loop() and len(p.slots) < sessions_per_worker
                  and (len(p.slots) + 1) * cost <= PACK_BUSY]  # fmt: skip
    return max(candidates, key=lambda p: len(p.slots), default=None)


_PLACING: dict[Any, asyncio.Lock] = {}


@contextlib.asynccontextmanager
async def placing(key: Any, sessions_per_worker: int) -> AsyncIterator[None]:
    """Sessions of one environment choose their process one at a time, where they may
    share, so that a burst of arrivals fills a process instead of each starting one."""
    if sessions_per_worker <= 1 or key not in _COSTS:
        yield
        return
    lock = _PLACING.setdefault(key, asyncio.Lock())
    async with lock:
        yield


def pooled(process: WorkerProcess) -> None:
    """Let later hosted envs of its environment join ``process`` (and measure its cost)."""
    _POOL.setdefault(process.key, []).append(process)
    process.pooled = True


def environment_key(study_id: str, spec_json: str, data_root: str, flush_interval_s: float,
                    allowed: AllowedEnvironments) -> Any:  # fmt: skip
    """Sessions share a process only with the same study, environment and settings."""
    return (study_id, spec_json, str(Path(data_root)), flush_interval_s, repr(allowed))
