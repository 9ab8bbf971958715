"""One live play session: its env worker, the current episode and the state machine.

The session is three layers of one class: its state and helpers
(:mod:`server.player._session_base`), how an episode ends (:mod:`server.player.endings`)
and, here, the connection and how an episode starts and steps.

Phases: ``idle`` (may start an episode) → ``starting`` → ``playing`` ⇄ ``paused`` →
``ended`` (the env ended it: ask to save) → ``idle``; ``closed`` at the end. A session
outlives its WebSocket for ``settings.reconnect_grace_s`` so a reload resumes it.
All state changes happen under one lock; database writes run in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, NoReturn

from sqlalchemy.orm import Session

from server.models import utcnow
from server.player import protocol as p
from server.player._phase import ACTIVE, Phase, PlayError, refused, wrong_state
from server.player._run import EpisodeRun
from server.player.endings import EpisodeEndings
from server.player.outbox import Frame, Outbox
from server.player.views import study_view
from server.recording.format import now_ms
from server.runtime import EnvWorker, RemoteError, StepEvent, WorkerError
from server.runtime.autonomy import FRAME_POLICY, failure_kind
from server.services.crowd import episodes, phone_codes, progress, quotas
from server.services.live import replicas
from server.services.studies.env_check import allowed_environments

log = logging.getLogger(__name__)
__all__ = ["ACTIVE", "LiveSession", "Phase", "PlayError", "refused", "wrong_state"]


class LiveSession(EpisodeEndings):
    """A player's session; messages come from :mod:`server.player.connection`."""

    # -- connection -----------------------------------------------------------------------
    async def attach(self, outbox: Outbox, resumed: bool, session_not_found: bool = False) -> None:
        """A connection takes over the session: hello, env, episode and its last frame
        (``session_not_found``: the ``session=`` asked for is not here; this one is new)."""
        async with self.lock:
            if self.outbox is not None and self.outbox is not outbox:
                self.outbox.close(p.CLOSE_REPLACED, "the session was opened elsewhere")
            self.outbox = outbox
            self._close_lanes()  # the page's lanes come with it: a new key for them
            self.last_input_seq = 0
            if resumed and self.phase == Phase.playing:  # taken over from a live connection
                if await self.pause_worker():
                    self.lost_connection = True
            if self._grace_timer is not None:
                self._grace_timer.cancel()
                self._grace_timer = None
            counts = await self.db(episodes.completed_counts, self.study_id, self.principal)
            outbox.send({"type": "hello", "protocol": p.PROTOCOL_VERSION, "session_id": self.id,
                         "resumed": resumed, "session_not_found": session_not_found,
                         "phase": self.phase,
                         "study": study_view(self.study_id, self.spec, counts),
                         "episode": self._episode_view(),
                         "participant": await self.participant_state(),
                         **self._lanes_offer()})  # fmt: skip
            env = self._env_view()
            if env is not None:
                outbox.send(env)
            if self.phone.nonce is not None:
                outbox.send(self.phone.status())
            run = self.run
            if run is not None and run.last_frame is not None:
                outbox.frame(Frame(run.index, run.step, run.last_frame))
            if self.phase == Phase.ended and run is not None:
                outbox.send(self._ended_message(run))
            if self.lost_connection and self.phase == Phase.paused:
                self.arm_pause_timer()
            self.lost_connection = False

    async def detach(self, outbox: Outbox) -> None:
        """The connection went away: pause, and abandon unless it comes back in time."""
        async with self.lock:
            if self.outbox is not outbox or self.phase == Phase.closed:
                return
            self.outbox = None
            self._close_lanes()
            if self.phase == Phase.playing:
                await self.pause_worker()
            self.lost_connection = True
            self._grace_timer = self._spawn(self._expire(self.settings.reconnect_grace_s))

    async def _expire(self, delay: float) -> None:
        await asyncio.sleep(delay)
        async with self.lock:
            self._grace_timer = None
            if self.outbox is None:  # nobody came back
                await self.shutdown("the connection was not resumed in time")

    def arm_pause_timer(self) -> None:
        """(Re)start the countdown after which a pause abandons the episode."""
        self.disarm_pause_timer()
        delay = self.spec.pause_timeout_s
        self._pause_deadline = asyncio.get_running_loop().time() + delay
        self._pause_timer = self._spawn(self._pause_expired(delay))

    async def _pause_expired(self, delay: float) -> None:
        await asyncio.sleep(delay)
        async with self.lock:
            self._pause_timer = None
            if self.phase in (Phase.paused, Phase.ready):
                await self._abandon("pause_timeout")
                message = "The pause lasted too long: the episode was abandoned."
                self.send({"type": "error", "code": "pause_timeout", "message": message})

    def frame_sent(self, frame: Frame) -> None:
        """Called by the sender as it hands a frame to the socket."""
        run = self.run
        if run is not None and run.index == frame.episode:
            run.frame_sent(frame.step, now_ms())

    # -- messages -----------------------------------------------------------------------
    async def begin(self, env_id: str, extra: bool = False) -> None:
        """Reserve the episode (a participant's is a quota reservation, taken in the database
        before any worker is built, so a refused start answers at once), then start or reuse
        the worker for ``env_id`` and reset the env."""
        fresh = self.worker is None or self.env_id != env_id or not self.worker.alive
        if fresh:
            await self._close_worker()
            if not await self._slots_left():
                raise PlayError("busy", "the server is at capacity; try again in a minute")
        row, seed = await self.db(self._reserve, env_id, extra)
        if fresh:
            try:
                await self._start_worker(env_id)
            except WorkerError as exc:
                await self._env_failed(env_id, row.id, exc)
        self.episodes_started += 1
        run = EpisodeRun(id=row.id, index=self.episodes_started, env_id=env_id, seed=seed)
        self.run = run
        assert self.worker is not None
        try:
            first = await self.worker.begin_episode(run.id, seed, paused=True)
        except WorkerError as exc:
            await self.fail(exc)
            return
        # the ready gate: the first frame, then nothing until ``go`` (a gate left standing
        # longer than a pause may is abandoned, which releases the quota reservation)
        self.phase = Phase.ready
        self.arm_pause_timer()
        self.send({"type": "episode_started", "episode": self._episode_view(),
                   "ready_gate": True, "countdown_s": self._countdown(env_id)})  # fmt: skip
        self._show(first)

    def _countdown(self, env_id: str) -> int:
        env = self.spec.environment(env_id)
        return env.countdown_s if env.mode == "async" else 0

    async def go(self) -> None:
        """The player is ready: start the clock; the episode's time counts from now."""
        run = self.run
        assert run is not None
        if not await self.resume_clock():
            return
        await self.db(episodes.mark_started, run.id)
        self.phase = Phase.playing
        self.send({"type": "started", "episode_id": run.id})

    async def resume_clock(self) -> bool:
        """Drop the pause timer and restart the worker's clock; False: the worker failed (the
        session has ended with an error)."""
        assert self.worker is not None
        self.disarm_pause_timer()
        try:
            await self.worker.resume()
        except WorkerError as exc:
            await self.fail(exc)
            return False
        return True

    def _reserve(self, db: Session, env_id: str, extra: bool) -> tuple[Any, int]:
        """The seed and the episode row, in one database session (a burst of starts waits on
        the thread pool: one hop each); a refusal comes with the participant's state."""
        seed = episodes.next_seed(db, self.study_id, self.spec.environment(env_id), self.principal)
        try:
            row = episodes.create_episode(
                db, study_id=self.study_id, env_key=env_id, session_id=self.id,
                principal=self.principal, seed=seed, data_root=self.settings.data_root,
                spec=self.spec, extra=extra, replica_id=self.settings.replica_id,
            )  # fmt: skip
        except quotas.QuotaError as exc:
            pid = self.principal.participant_id
            state = progress.state_for(db, self.study_id, self.spec, pid, env_id) if pid else None
            raise refused(exc.code or "quota_reached", exc.message, state) from None
        return row, seed

    async def refusal(self, code: str, message: str, env_id: str | None = None) -> PlayError:
        """A refused start: a participant's carries their state and ``next``, the way forward
        (another environment, or the completion page when nothing is left)."""
        return refused(code, message, await self.participant_state(last_env=env_id))

    async def _env_failed(self, env_id: str, episode_id: str, exc: WorkerError) -> NoReturn:
        """The environment did not start: log and store the details on its reserved episode
        (``failed``, which frees the reservation; the designer sees it); a participant gets a
        plain message and the way forward."""
        detail = f"{type(exc).__name__}: {exc}"
        log.warning("environment %s of study %s did not start: %s", env_id, self.study_id, detail)
        await self.db(episodes.record_start_failure, episode_id, detail[:4000])
        if self.principal.participant_id is None:  # a designer test-playing: the details
            raise PlayError("env_failed", f"the environment did not start: {exc}")
        raise await self.refusal("env_failed", progress.FAILED_MESSAGE, env_id)

    async def _start_worker(self, env_id: str) -> None:
        env = self.spec.environment(env_id)
        # The worker refuses a source the operator does not allow (a study stored before the
        # allow-list, or edited in the database); the list reads package metadata: a thread.
        allowed = await asyncio.to_thread(allowed_environments, self.settings)
        worker = await EnvWorker.start(
            env, allowed=allowed, study_id=self.study_id, data_root=self.settings.data_root,
            timeout=self.settings.worker_start_timeout_s,
            reply_timeout=self.settings.worker_timeout_s,
            sessions_per_worker=self.settings.sessions_per_worker,
        )  # fmt: skip
        self.worker, self.env_id = worker, env_id
        self.speed = env.speed  # each environment starts at its own (the designer's) speed
        if env.mode == "async":
            if self.speed != 1.0:
                await worker.set_speed(self.speed)
            self._spawn(self._pump(worker))
        if self.quality is not None:
            await worker.set_quality(self.quality)  # type: ignore[arg-type]
        self.adaptive = None  # a new worker streams at the ceiling, every frame
        self.camera = None
        self.send(self._env_view() or {})

    async def _slots_left(self) -> bool:
        """Room for one more worker: ``max_workers`` counts this process's; the total and
        per-study caps count every live replica's (their last heartbeat tick, plus ours now)."""
        s = self.settings
        here = self._workers_in_use(None)
        if here >= s.max_workers:
            return False
        if not (s.max_workers_total or s.max_workers_per_study):
            return True
        mine = self._workers_in_use(self.study_id)
        total, study = await self.db(replicas.workers_elsewhere_both, s.replica_dead_after_s,
                                     s.replica_id, self.study_id)  # fmt: skip
        if s.max_workers_total and here + total >= s.max_workers_total:
            return False
        return not (s.max_workers_per_study and mine + study >= s.max_workers_per_study)

    async def pause_worker(self) -> bool:
        """Stop the worker's clock, save progress and enter ``paused``; False if the worker
        failed meanwhile."""
        assert self.worker is not None and self.run is not None
        try:
            await self.worker.pause()
        except WorkerError as exc:
            await self.fail(exc)
            return False
        run = self.run
        await self.db(episodes.record_progress, run.id, run.steps, run.return_)
        self.phase = Phase.paused
        return True

    async def worker_call(self, coro: Any) -> None:
        """Await a setting change: refused ones become :class:`PlayError`, crashes fail."""
        try:
            await coro
        except RemoteError as exc:
            if exc.kind == "ProtocolError" or exc.kind in ("KeyError", "ValueError"):
                raise PlayError("rejected", exc.message) from None
            await self.fail(exc)
        except WorkerError as exc:
            await self.fail(exc)

    # -- events ---------------------------------------------------------------------------
    async def _pump(self, worker: EnvWorker) -> None:
        """Async mode: forward the worker's clock-driven events until it closes."""
        error: BaseException | None = None
        try:
            async for event in worker.events():
                async with self.lock:
                    if worker is self.worker:
                        await self.on_event(event, clock=True)
        except RemoteError as exc:
            error = exc
        async with self.lock:
            if worker is self.worker:  # not closed on purpose: it crashed or died
                await self.fail(error or WorkerError("the environment worker exited"))

    async def on_event(self, event: StepEvent, clock: bool = False) -> None:
        """A step of the current episode: show its frame; at the last one, ask to save."""
        run = self.run
        if run is None or event.episode_id != run.id or self.phase not in ACTIVE:
            return
        # async: the held input counts as applied at the first step the worker began after
        # it was forwarded (a step already under way when it arrived did not use it)
        if clock and run.pending_input_ms is not None:
            if event.worker_ms - event.work_ms >= run.forwarded_ms:
                run.count_actions(event.step - 1)  # taken with the input held before
                run.held = run.pending_held
                run.applied(event.step, run.pending_input_ms)
        run.count_actions(event.step)
        self._control(run, event)
        run.step, run.return_ = event.step, event.return_
        self._show(event)
        if event.done:
            run.end_reason, run.ended_at = event.end_reason, utcnow()
            self.disarm_pause_timer()
            self.phase = Phase.ended
            await self.db(episodes.record_progress, run.id, run.steps, run.return_)
            self.send(self._ended_message(run))

    def _control(self, run: EpisodeRun, event: StepEvent) -> None:
        """Shared autonomy: count who drove the step; say once that the policy stopped and
        why (``reason``: ``slow`` or ``failed``; the error itself only to a designer)."""
        if not event.control:
            return
        if event.step > run.driven_step:
            run.inputs.drove(event.control == FRAME_POLICY, event.interventions)
            run.driven_step = event.step
        if event.policy_error and run.policy_error is None:
            run.policy_error = event.policy_error
            message = None
            if self.principal.participant_id is None:
                message = f"The policy stopped driving: {event.policy_error}"
            self.send({"type": "policy_failed", "episode_id": run.id,
                       "reason": failure_kind(event.policy_error), "message": message})  # fmt: skip

    def _ended_message(self, run: EpisodeRun) -> dict[str, Any]:
        return {"type": "episode_ended", "episode_id": run.id, "index": run.index,
                "steps": run.steps, "return": run.return_, "end_reason": run.end_reason,
                "ask_save": True, "ask_outcome": self.spec.asks_outcome(run.env_id)}  # fmt: skip

    def _show(self, event: StepEvent) -> None:
        run = self.run
        assert run is not None
        if not event.frame:
            return  # recorded, not streamed: the adaptive stream's lower frame rate
        data = p.pack_frame(
            run.index, event.step, now_ms(), event.return_, event.frame, event.control
        )
        run.last_frame = data
        run.step = max(run.step, event.step)
        outbox = self.next_frame_outbox()
        if outbox is None:
            run.frames_dropped += 1
            return
        dropped = outbox.frame(Frame(run.index, event.step, data))
        if dropped is not None and dropped.episode == run.index:
            run.frames_dropped += 1

    async def shutdown(self, reason: str, end_reason: str = "disconnected") -> None:
        """End the session (lock held): abandon a running episode, stop the worker."""
        if self.phase == Phase.closed:
            return
        await self._abandon(end_reason)
        await self._close_worker()
        self.phase = Phase.closed
        self.disarm_pause_timer()
        self.phone.end(reason)
        await self.db(phone_codes.drop_session, self.id)
        await self.db(episodes.end_session, self.id)
        self._close_lanes()
        if self.outbox is not None:
            self.outbox.send({"type": "session_ended", "reason": reason})
            self.outbox.close(p.CLOSE_ENDED, reason)
        self._on_closed(self)

    async def close(self, reason: str) -> None:
        """End the session: abandon a running episode, stop the worker, stamp the row."""
        async with self.lock:
            await self.shutdown(reason)
