"""A play session's environment worker and what its stream is set to: speed, JPEG quality,
camera and the adaptive stream (:class:`EnvLink`, owned by the live session)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio.from_thread

from server.core.config import Settings
from server.player._phase import PlayError
from server.player._store import SessionStore
from server.player.adaptive import QualityController
from server.player.episode_run import EpisodeRun
from server.player.outbox import Outbox
from server.player.views import env_ready
from server.recording.format import now_ms
from server.runtime import EnvWorker, RemoteError, StepEvent, WorkerError
from server.runtime.catalog import action_dimensions
from server.runtime.warm_pool import WarmPool
from server.services.studies.env_check import allowed_environments
from server.study_spec import EnvironmentSpec, StudySpec

log = logging.getLogger(__name__)
T = TypeVar("T")


def _start_args(settings: Settings, study_id: int, allowed: Any) -> dict[str, Any]:
    """What a play session's worker is started with (a warm one too: the same, exactly)."""
    return {
        "allowed": allowed,
        "study_id": study_id,
        "data_root": settings.data_root,
        "timeout": settings.worker_start_timeout_s,
        "reply_timeout": settings.worker_timeout_s,
    }


async def prewarm(
    warm: WarmPool | None, spec: StudySpec, settings: Settings, study_id: int
) -> None:
    """A play session opened: its study's environments are in demand (warm workers for
    them are started in the background, within the pool's limits)."""
    if warm is None or not warm.enabled:
        return
    allowed = await asyncio.to_thread(allowed_environments, settings)
    for env in spec.environments:
        warm.want(env, **_start_args(settings, study_id, allowed))


def prewarm_from_request(
    warm: WarmPool | None, spec: StudySpec, settings: Settings, study_id: int
) -> None:
    """:func:`prewarm` from a sync route's thread (a participant joined: their consent and
    instructions come first, time enough for a runtime's worker to start)."""
    if warm is not None and warm.enabled:
        anyio.from_thread.run(prewarm, warm, spec, settings, study_id)


class EnvLink:
    """The session's worker (None between environments) and its stream settings. A worker
    that crashes or dies during a setting goes to ``on_failure`` (:meth:`call`); elsewhere
    worker errors propagate: what they mean for the episode is the session's to decide."""

    def __init__(self, on_failure: Callable[[BaseException], Awaitable[None]]) -> None:
        self.on_failure = on_failure  # the worker crashed or died
        self.worker: EnvWorker | None = None
        self.env_id: str | None = None
        self.source: Any = None  # the source (with its settings) the worker was built from
        self.speed = 1.0
        self.quality: str | None = None  # what the player chose
        self.adaptive: QualityController | None = None  # the adaptive stream's, if on
        self.camera: str | None = None

    @property
    def is_async(self) -> bool:
        """True while a worker of an async (real-time) environment runs."""
        return self.worker is not None and self.worker.info.get("mode") == "async"

    def reusable_for(self, env_id: str) -> bool:
        """True when the running worker is ``env_id``'s and alive."""
        return self.worker is not None and self.env_id == env_id and self.worker.alive

    def runs(self, env: EnvironmentSpec) -> bool:
        """True when the running worker is ``env``'s, built from the same source and settings
        (a task with settings of its own needs its own environment)."""
        return self.reusable_for(env.id) and self.source == env.source

    async def start(
        self, env: EnvironmentSpec, settings: Settings, study_id: int, warm: WarmPool | None = None
    ) -> EnvWorker:
        """Start a worker for ``env`` (a warm one from ``warm`` when it has one) at its own
        (the designer's) speed and the player's quality; a new worker streams at the
        ceiling, every frame."""
        # The worker refuses a source the operator does not allow (a study stored before the
        # allow-list, or edited in the database); the list reads package metadata: a thread.
        allowed = await asyncio.to_thread(allowed_environments, settings)
        worker = None
        if warm is not None:
            worker = await warm.take(env, **_start_args(settings, study_id, allowed))
        if worker is None:
            worker = await EnvWorker.start(
                env,
                **_start_args(settings, study_id, allowed),
                sessions_per_worker=settings.sessions_per_worker,
            )
        self.worker, self.env_id, self.source = worker, env.id, env.source
        self.speed = env.speed
        if env.mode == "async" and self.speed != 1.0:
            await worker.set_speed(self.speed)
        if self.quality is not None:
            await worker.set_quality(self.quality)  # type: ignore[arg-type]
        self.adaptive = None
        self.camera = None
        return worker

    async def end_episode(self, run: EpisodeRun, reason: str, store: SessionStore,
                          timeout: float) -> dict[str, Any] | None:  # fmt: skip
        """Finalize the episode's log early (the participant's end, cancel, abandon); the run
        counts what it holds (a worker that died is closed and its log read, its journal put
        back). Returns the worker's summary (None: no worker, or it died)."""
        if self.worker is None:
            return None
        try:
            summary = await self.worker.end_episode(reason, run.id)
        except WorkerError as exc:
            log.warning("end_episode failed: %s", exc)
            await self.close(timeout)
            run.counted(await store.log_totals(run))
            return None
        run.counted(None, summary)
        if summary:
            run.success = summary.get("success")
        return summary

    async def close(self, timeout: float) -> None:
        """Stop the worker, if any."""
        worker, self.worker, self.env_id = self.worker, None, None
        if worker is not None:
            await worker.close(timeout=timeout)

    def view(self, spec: StudySpec) -> dict[str, Any] | None:
        """The ``env_ready`` message (None without a worker): the camera the player switched
        to, not the first one."""
        if self.worker is None or self.env_id is None:
            return None
        env = spec.environment(self.env_id)
        info = self.worker.info
        info = info if self.camera is None else {**info, "camera": self.camera}
        quality = self.quality or env.image_quality
        return env_ready(env.id, info, self.speed, quality, action_dimensions(env.source))

    async def attempt(self, call: Awaitable[T]) -> tuple[bool, T | None]:
        """Await a call to the worker: ``(True, its result)``, or ``(False, None)`` once a
        crash went to ``on_failure`` (the session failed the episode)."""
        try:
            return True, await call
        except WorkerError as exc:
            await self.on_failure(exc)
            return False, None

    async def call(self, call: Awaitable[Any]) -> bool:
        """Await a call to the worker: a refused one is a :class:`PlayError`; a crash goes to
        ``on_failure`` (the session fails the episode): False then."""
        try:
            await call
        except RemoteError as exc:
            if exc.kind == "ProtocolError" or exc.kind in ("KeyError", "ValueError"):
                raise PlayError("rejected", exc.message) from None
            await self.on_failure(exc)
            return False
        except WorkerError as exc:
            await self.on_failure(exc)
            return False
        return True

    async def setting(self, name: str, value: Any, env: EnvironmentSpec | None) -> dict[str, Any]:
        """Change one stream setting (``speed``, ``quality`` or ``camera``; ``env``: the
        running environment); the ``setting`` message for the page."""
        if name == "speed":
            return await self.set_speed(env, value)
        if name == "quality":
            return await self.set_quality(value)
        return await self.set_camera(value)

    async def pump(self, worker: EnvWorker, lock: asyncio.Lock,
                   on_event: Callable[[StepEvent], Awaitable[None]]) -> None:  # fmt: skip
        """Async mode: hand the worker's clock-driven events to ``on_event`` (under the
        session's ``lock``) until it closes; a worker not closed on purpose crashed or died."""
        error: BaseException | None = None
        try:
            async for event in worker.events():
                async with lock:
                    if worker is self.worker:
                        await on_event(event)
        except RemoteError as exc:
            error = exc
        async with lock:
            if worker is self.worker:
                await self.on_failure(error or WorkerError("the environment worker exited"))

    async def set_speed(self, env: EnvironmentSpec | None, speed: float) -> dict[str, Any]:
        """The async clock's speed: one of the environment's ``speed_choices`` (none: fixed);
        the ``setting`` message."""
        if env is None or env.mode != "async" or self.worker is None:
            raise PlayError("not_async", "speed applies to real-time (async) environments only")
        if speed not in env.speed_choices:
            allowed = ", ".join(f"{v:g}" for v in env.speed_choices) or f"{env.speed:g} (fixed)"
            raise PlayError("speed_locked", f"this game's speed is {allowed}")
        await self.call(self.worker.set_speed(speed))
        self.speed = speed
        return {"type": "setting", "speed": speed}

    async def set_quality(self, quality: Any) -> dict[str, Any]:
        """The player's JPEG quality of the next frames (the adaptive stream's ceiling)."""
        if self.worker is not None:
            await self.call(self.worker.set_quality(quality))
        self.quality = quality
        if self.adaptive is not None:
            self.adaptive.set_ceiling(quality)
        return {"type": "setting", "quality": quality}

    async def set_camera(self, camera: str) -> dict[str, Any]:
        """Render from another camera (one of the worker's)."""
        if self.worker is None or camera not in (self.worker.info.get("cameras") or []):
            raise PlayError("unknown_camera", f"no camera {camera!r} here")
        await self.call(self.worker.set_camera(camera))
        self.camera = camera
        return {"type": "setting", "camera": camera}

    async def adapt(self, env: EnvironmentSpec, delay_ms: float, dropped: int,
                    outboxes: list[Outbox]) -> dict[str, Any] | None:  # fmt: skip
        """The adaptive stream (``adaptive_quality``): one more ack delay. Async frames are
        ack-clocked by it; a new level (or frame rate, see ``min_stream_fps``) is sent to the
        worker (the frames that follow, and their records, carry it); the ``setting`` message
        for the page when one changed."""
        assert self.worker is not None
        stream = self.adaptive
        if stream is None or stream.env_id != env.id:
            stream = self.adaptive = QualityController(
                self.quality or env.image_quality, env.id, env.max_stream_every
            )
        if outboxes and env.mode == "async":  # frames ack-clocked (outbox.FrameWindow)
            # the page's window is shared out between its sockets; a socket held up by a
            # retransmission stall fills its share and the others carry (LiveSession._show)
            period_ms = 1000 * stream.every / (env.fps * self.speed)
            for outbox in outboxes:
                outbox.clock(delay_ms, period_ms, len(outboxes))
        level, every = stream.level, stream.every
        if not stream.on_ack(delay_ms, now_ms(), dropped):
            return None
        new_level = stream.level  # one of the QUALITY names
        if new_level != level and not await self.call(self.worker.set_quality(new_level)):  # type: ignore[arg-type]
            return None
        if stream.every != every and not await self.call(
            self.worker.set_stream_every(stream.every)
        ):
            return None
        return {"type": "setting", "quality": stream.level, "stream_every": stream.every,
                "adaptive": True}  # fmt: skip
