"""Async facade over one environment worker process (see the package docstring)."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

from server.recording.writer import FLUSH_INTERVAL_S
from server.runtime._child import worker_main
from server.runtime._wire import Wire, frame_message, settle
from server.runtime.allowlist import AllowedEnvironments
from server.study_spec import EnvironmentSpec

# forkserver: the server process pre-imports the runtime once, so each worker starts by a
# cheap fork of a clean, thread-free process (spawn re-imports numpy/gymnasium per worker).
START_METHOD = "forkserver"
_PRELOAD = ["server.runtime._child"]


class WorkerError(RuntimeError):
    """Base class of runtime errors seen by the app."""


class WorkerTimeout(WorkerError):
    """The worker did not answer in time; it has been killed."""


class WorkerClosed(WorkerError):
    """The worker is closed or died (use after close, crash, kill)."""


class RemoteError(WorkerError):
    """An exception raised in the worker: ``kind`` (type name), message and traceback."""

    def __init__(self, kind: str, message: str, traceback: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.traceback = traceback


@dataclass(frozen=True, slots=True)
class StepEvent:
    """One recorded timestep as the player needs it (``step`` 0 is the first frame)."""

    episode_id: str
    step: int
    reward: float
    return_: float
    terminated: bool
    truncated: bool
    end_reason: str | None
    frame: bytes  # JPEG
    worker_ms: float  # wall clock (ms since the epoch) when the event left the worker
    work_ms: float  # time the worker spent on this step: map, step, render, encode, record
    # shared autonomy (server/runtime/autonomy.py): the frame header's control byte (0: no
    # policy, 1: the player drives, 2: the policy), takeovers so far, why the policy stopped
    control: int = 0
    interventions: int = 0
    policy_error: str | None = None

    @property
    def done(self) -> bool:
        """True on the episode's last step."""
        return self.terminated or self.truncated

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> StepEvent:
        data = dict(data)
        data["return_"] = data.pop("return")
        return cls(**data)


def _context() -> Any:
    ctx = multiprocessing.get_context(START_METHOD)
    if START_METHOD == "forkserver":
        ctx.set_forkserver_preload(_PRELOAD)
    return ctx


class EnvWorker:
    """One environment worker process, driven with awaitable methods."""

    def __init__(self, process: Any, reply_timeout: float) -> None:
        self._process = process
        self._wire = Wire(self._dispatch, self._on_dead)
        self.reply_timeout = reply_timeout
        self.info: dict[str, Any] = {}
        self._loop = asyncio.get_running_loop()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ready: asyncio.Future[Any] = self._loop.create_future()
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False
        self._dead = False

    async def _connect(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        await self._loop.create_unix_connection(lambda: self._wire, sock=sock)

    # -- lifecycle --------------------------------------------------------------------------
    @classmethod
    async def start(
        cls,
        env_spec: EnvironmentSpec,
        *,
        allowed: AllowedEnvironments,
        study_id: int | str,
        data_root: Path | str,
        timeout: float = 60.0,
        reply_timeout: float = 10.0,
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> EnvWorker:
        """Start a worker and build its environment (WorkerTimeout / RemoteError on failure).

        The worker refuses (``RemoteError`` of kind ``NotAllowed``) a source ``allowed`` does
        not allow, before importing anything.
        """
        ctx = _context()
        # A socket pair, as ``ctx.Pipe`` makes one: the worker's end is a blocking
        # Connection, the app's end belongs to the event loop (:class:`server.runtime._wire.Wire`).
        parent, child_sock = socket.socketpair()
        child = Connection(child_sock.detach())
        process = ctx.Process(
            target=worker_main,
            args=(child, env_spec.model_dump_json(), allowed, str(study_id), str(data_root),
                  flush_interval_s),
            daemon=True,
            name=f"env-worker-{env_spec.id}",
        )  # fmt: skip
        # Starting a forkserver process blocks briefly (first use starts the server).
        try:
            await asyncio.to_thread(process.start)
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        worker = cls(process, reply_timeout)
        try:
            try:
                await worker._connect(parent)
            except BaseException:
                parent.close()
                raise
            worker.info = await worker._wait(worker._ready, timeout)
        except BaseException:
            await worker.close(timeout=1.0)
            raise
        return worker

    @property
    def pid(self) -> int | None:
        """The worker's process id."""
        return self._process.pid

    @property
    def alive(self) -> bool:
        """True while the worker can take commands."""
        return not (self._closed or self._dead)

    async def close(self, timeout: float = 5.0) -> None:
        """Ask the worker to finish (episode finalized, env closed), then make sure it exits.

        Sends ``close``, waits up to ``timeout`` for it to exit, then terminates and finally
        kills it. Safe to call twice.
        """
        if self._closed:
            return
        was_alive = self.alive
        self._closed = True
        if was_alive:
            try:
                await self._request("close", None, timeout, closing=True)
            except WorkerError:
                pass
        await self._reap(timeout)

    async def _reap(self, timeout: float) -> None:
        for stop, wait in ((None, timeout), ("terminate", 1.0), ("kill", 5.0)):
            if stop is not None and self._process.is_alive():
                getattr(self._process, stop)()
            if await self._exited(wait):
                break
        self._shutdown()
        if not self._process.is_alive():  # else unkillable (D state): leave it to the OS
            self._process.join(0)
            self._process.close()

    async def _exited(self, timeout: float) -> bool:
        if not self._process.is_alive():
            return True
        done = self._loop.create_future()
        sentinel = self._process.sentinel
        self._loop.add_reader(sentinel, lambda: settle(done))
        try:
            await asyncio.wait_for(done, timeout)
        except TimeoutError:
            return not self._process.is_alive()
        finally:
            self._loop.remove_reader(sentinel)
        # With "spawn" the sentinel fires when the child's fds close, slightly before it can
        # be reaped: poll briefly instead of blocking the loop in join().
        for _ in range(200):
            if not self._process.is_alive():
                return True
            await asyncio.sleep(0.005)
        return False

    # -- commands ---------------------------------------------------------------------------
    async def begin_episode(
        self, episode_id: str, seed: int | None = None, paused: bool = False
    ) -> StepEvent:
        """Reset with ``seed`` and start recording; returns the first frame's event.

        ``paused``: the async clock (and ``max_duration_s``) waits for :meth:`resume`.
        """
        payload = {"episode_id": episode_id, "seed": seed, "paused": paused}
        return StepEvent.from_wire(await self._request("begin_episode", payload))

    async def send_input(
        self, input: Any, timing: dict[str, Any] | None = None, acks: list[Any] | None = None
    ) -> StepEvent | None:
        """Sync mode: step with ``input`` and return the event. Async: update the held input."""
        payload = {"input": input, "timing": timing or {}, "acks": acks or []}
        if self.info.get("mode") == "async":
            await self._send("input", payload, None)
            return None
        return StepEvent.from_wire(await self._request("input", payload))

    async def send_acks(self, acks: list[Any]) -> None:
        """Frame acks drawn since the last input, recorded with the next step (no step now)."""
        await self._send("acks", acks, None)

    async def events(self) -> AsyncIterator[StepEvent]:
        """Async-mode step events as the worker pushes them; ends when the worker closes.

        An environment error during an async step is raised here as :class:`RemoteError`.
        """
        while True:
            item = await self._events.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    async def pause(self) -> None:
        """Stop the async clock (no effect in sync mode)."""
        await self._request("pause", None)

    async def resume(self) -> None:
        """Restart the async clock from now."""
        await self._request("resume", None)

    async def set_speed(self, speed: float) -> None:
        """Async clock speed factor in [0.05, 10] (1 = the env's fps)."""
        await self._request("set_speed", {"speed": speed})

    async def set_quality(self, quality: Literal["low", "medium", "high"]) -> None:
        """JPEG quality of the following frames."""
        await self._request("set_quality", {"quality": quality})

    async def set_camera(self, camera: str) -> None:
        """Render from another camera (one of ``info['cameras']``)."""
        await self._request("set_camera", {"camera": camera})

    async def end_episode(
        self, reason: str, episode_id: str | None = None
    ) -> dict[str, Any] | None:
        """Finalize the episode's log; returns its summary, None if none was open.

        With ``episode_id``: if that episode already ended on its own (its last events may
        not have been read yet), its summary, with ``ended_before: True``.
        """
        return await self._request("end_episode", {"reason": reason, "episode_id": episode_id})

    async def preview(
        self, seed: int | None = None, inputs: list[Any] | None = None
    ) -> dict[str, Any]:
        """Reset without recording, step once per input: ``{"frame": JPEG, "actions"}``."""
        return await self._request("preview", {"seed": seed, "inputs": inputs or []})

    async def ping(self) -> None:
        """Round trip to the worker (health check)."""
        await self._request("ping", None)

    # -- plumbing ---------------------------------------------------------------------------
    async def _request(
        self, command: str, payload: Any, timeout: float | None = None, closing: bool = False
    ) -> Any:
        if self._closed and not closing:
            raise WorkerClosed("the worker is closed")
        rid = next(self._ids)
        future = self._loop.create_future()
        self._pending[rid] = future
        try:
            await self._send(command, payload, rid, closing=closing)
            return await self._wait(future, timeout or self.reply_timeout)
        finally:
            self._pending.pop(rid, None)

    async def _send(self, command: str, payload: Any, rid: int | None, closing: bool = False):
        if self._dead or (self._closed and not closing):
            raise WorkerClosed("the worker is closed")
        wire = self._wire
        # Never let commands pile up behind a worker that stopped reading (a stuck worker):
        # while the transport's buffer is over its high-water mark, wait for it to drain.
        if wire.drained is not None:
            await self._wait(asyncio.shield(wire.drained), self.reply_timeout)
            if self._dead:
                raise WorkerClosed("the worker is gone")
        assert wire.transport is not None
        wire.transport.write(frame_message((command, payload, rid)))

    async def _wait(self, future: asyncio.Future[Any], timeout: float) -> Any:
        # asyncio.timeout is much cheaper than wait_for(shield(...)) on this hot path.
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            # A worker that misses a deadline is stuck: kill it so it frees its core.
            self._kill()
            raise WorkerTimeout(f"no answer from the worker within {timeout:g} s") from None

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "event":
            self._events.put_nowait(StepEvent.from_wire(message[1]))
        elif kind == "reply":
            _, rid, ok, result = message
            future = self._pending.get(rid)
            if future is not None and not future.done():
                if ok:
                    future.set_result(result)
                else:
                    future.set_exception(RemoteError(*result))
        elif kind == "error":
            self._events.put_nowait(RemoteError(*message[1]))
        elif kind == "ready" and not self._ready.done():
            self._ready.set_result(message[1])
        elif kind == "failed" and not self._ready.done():
            self._ready.set_exception(RemoteError(*message[1]))

    def _kill(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._on_dead()

    def _on_dead(self) -> None:
        if self._dead:
            return
        self._dead = True
        error = WorkerClosed(f"the worker exited (code {self._process.exitcode})")
        for future in [self._ready, *self._pending.values()]:
            if not future.done():
                future.set_exception(error)
                future.exception()  # mark retrieved: nobody may be waiting any more
        self._events.put_nowait(None)

    def _shutdown(self) -> None:
        self._on_dead()
        if self._wire.transport is not None:
            self._wire.transport.abort()
