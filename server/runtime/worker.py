"""Async facade over one environment hosted in a worker process (see the package
docstring; the processes themselves: :mod:`server.runtime.worker_process`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from server.recording.writer import FLUSH_INTERVAL_S
from server.runtime import runtimes, worker_process
from server.runtime._wire import EVENT_FIELDS
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.catalog import runtime_of
from server.runtime.errors import RemoteError, WorkerClosed, WorkerError, WorkerTimeout
from server.runtime.worker_process import WorkerProcess
from server.study_spec import EnvironmentSpec, TaskSpec

__all__ = ["EnvWorker", "RemoteError", "StepEvent", "WorkerClosed", "WorkerError",
           "WorkerTimeout"]  # fmt: skip


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
    # at the last step: the environment's report of success (info ``is_success``; None: it
    # reports none, or not the last step)
    success: bool | None = None

    @property
    def done(self) -> bool:
        """True on the episode's last step."""
        return self.terminated or self.truncated

    @classmethod
    def from_wire(cls, data: tuple[Any, ...]) -> StepEvent:
        """The event as the worker sent it: its fields in order (``_wire.EVENT_FIELDS``)."""
        return cls(*data)


assert tuple(f.name for f in fields(StepEvent)) == EVENT_FIELDS  # the worker's tuple order


class EnvWorker:
    """One environment hosted in a worker process, driven with awaitable methods."""

    def __init__(self, process: WorkerProcess, reply_timeout: float) -> None:
        self._proc = process
        self.slot = process.add(self)
        self.reply_timeout = reply_timeout
        self.info: dict[str, Any] = {}
        self._loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[Any] = self._loop.create_future()
        self._events: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False
        self._dead = False

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
        sessions_per_worker: int = 1,
    ) -> EnvWorker:
        """Start a hosted env and build its environment (WorkerTimeout / RemoteError on failure).

        The session gets a worker process of its own, or with ``sessions_per_worker`` above
        1 may join one running the same study's environment (:mod:`server.runtime.worker_process`).
        The worker refuses (``RemoteError`` of kind ``NotAllowed``) a source ``allowed`` does
        not allow, before importing anything.
        """
        runtime = runtime_of(env_spec.source)
        if runtime != runtimes.APP:
            found = await asyncio.to_thread(runtimes.state, runtime)  # checked once per install
            if not found.ok:
                raise RemoteError("RuntimeUnavailable", found.message, "")
        spec_json = env_spec.model_dump_json()
        key = worker_process.environment_key(str(study_id), spec_json, str(data_root),
                                       flush_interval_s, allowed)  # fmt: skip
        async with worker_process.placing(key, sessions_per_worker):  # a burst fills processes
            process = worker_process.joinable(key, sessions_per_worker)
            if process is None:
                process = await WorkerProcess.start(key, allowed, str(study_id), str(data_root),
                                                    flush_interval_s, runtime)  # fmt: skip
                if sessions_per_worker > 1:
                    worker_process.pooled(process)
            worker = cls(process, reply_timeout)  # takes its slot before anyone else looks
        try:
            process.send(worker.slot, "open", spec_json, None)
            worker.info = await worker._wait(worker._ready, timeout)
        except BaseException:
            await worker.close(timeout=1.0)
            raise
        return worker

    @property
    def pid(self) -> int | None:
        """The worker process's id (shared by the hosted envs in it)."""
        return self._proc.process.pid

    @property
    def alive(self) -> bool:
        """True while the worker can take commands."""
        return not (self._closed or self._dead)

    async def close(self, timeout: float = 5.0) -> None:
        """End the hosted env (episode finalized, env closed); the process exits with its last.

        Sends ``close``, and when no other hosted env is in the process waits up to
        ``timeout`` for it to exit, then terminates and finally kills it. Safe to call twice.
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
        if self._proc.release(self.slot):
            await self._proc.reap(timeout)
        self.on_dead()

    # -- commands ---------------------------------------------------------------------------
    async def begin_episode(
        self,
        episode_id: str,
        seed: int | None = None,
        paused: bool = False,
        task: TaskSpec | None = None,
    ) -> StepEvent:
        """Reset with ``seed`` and start recording; returns the first frame's event.

        ``paused``: the async clock (and ``max_duration_s``) waits for :meth:`resume`.
        ``task``: the task the episode drew, recorded in the log's environment config.
        """
        payload = {"episode_id": episode_id, "seed": seed, "paused": paused,
                   "task": None if task is None else task.model_dump()}  # fmt: skip
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

    async def set_stream_every(self, every: int) -> None:
        """Stream every ``every``-th step's frame (and each step with a fresh input); the
        others are recorded, not sent."""
        await self._request("set_stream_every", {"every": every})

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

    async def policy_trial(
        self, seed: int | None = None, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """Time the environment's policy on a few steps it drives (not recorded), from a
        reset with ``seed``: ``SharedAutonomy.trial``'s report, None without a policy."""
        return await self._request("policy_trial", {"seed": seed}, timeout)

    async def replay_trial(
        self, seed: int | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Whether the environment replays: it runs trial actions from a reset with ``seed``
        and a fresh copy of it replays them (not recorded; ``replay_check.trial``'s report)."""
        return await self._request("replay_trial", {"seed": seed}, timeout)

    async def ping(self, timeout: float | None = None) -> None:
        """Round trip to the worker (health check); one that misses ``timeout`` (default:
        the reply timeout) is killed (:class:`WorkerTimeout`)."""
        await self._request("ping", None, timeout)

    # -- plumbing ---------------------------------------------------------------------------
    async def _request(
        self, command: str, payload: Any, timeout: float | None = None, closing: bool = False
    ) -> Any:
        if self._closed and not closing:
            raise WorkerClosed("the worker is closed")
        proc = self._proc
        rid = next(proc.rids)
        future = self._loop.create_future()
        proc.pending[rid] = future
        try:
            await self._send(command, payload, rid, closing=closing)
            return await self._wait(future, timeout or self.reply_timeout)
        finally:
            proc.pending.pop(rid, None)

    async def _send(self, command: str, payload: Any, rid: int | None, closing: bool = False):
        if self._dead or (self._closed and not closing):
            raise WorkerClosed("the worker is closed")
        wire = self._proc.wire
        # Never let commands pile up behind a worker that stopped reading (a stuck worker):
        # while the transport's buffer is over its high-water mark, wait for it to drain.
        if wire.drained is not None:
            await self._wait(asyncio.shield(wire.drained), self.reply_timeout)
            if self._dead:
                raise WorkerClosed("the worker is gone")
        self._proc.send(self.slot, command, payload, rid)

    async def _wait(self, future: asyncio.Future[Any], timeout: float) -> Any:
        # asyncio.timeout is much cheaper than wait_for(shield(...)) on this hot path.
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            # A worker that misses a deadline is stuck: kill it so it frees its core.
            self._proc.kill()
            raise WorkerTimeout(f"no answer from the worker within {timeout:g} s") from None

    def on_message(self, kind: str, payload: Any) -> None:
        """A message of this hosted env's slot (:class:`WorkerProcess`)."""
        if kind == "event":
            self._events.put_nowait(StepEvent.from_wire(payload))
        elif kind == "error":
            self._events.put_nowait(RemoteError(*payload))
        elif kind == "ready" and not self._ready.done():
            self._ready.set_result(payload)
        elif kind == "failed" and not self._ready.done():
            self._ready.set_exception(RemoteError(*payload))

    def on_dead(self) -> None:
        """The process died or this hosted env was closed: nothing more will come."""
        if self._dead:
            return
        self._dead = True
        if not self._ready.done():
            self._ready.set_exception(
                WorkerClosed(f"the worker exited (code {self._proc.process.exitcode})")
            )
            self._ready.exception()  # mark retrieved: nobody may be waiting any more
        self._events.put_nowait(None)
