"""One live play session, :class:`LiveSession`: its state machine (phases, inputs, endings)
in one class, which owns its sockets (``lanes.py``), worker and stream settings
(``env_link.py``), inputs and frames (``stream.py``), database side (``_store.py``), timers,
running episode (``_run.py``) and phone (``phone.py``); none of them changes its phase.

Phases: ``idle`` → ``starting`` → ``ready`` (first frame shown) → ``playing`` ⇄ ``paused`` →
``ended`` (the env, or the participant, ended it: ask to save) → ``idle``; ``closed`` at the
end. A session outlives its WebSocket for ``settings.reconnect_grace_s`` so a reload resumes
it. State changes happen under one lock (:meth:`serve`); each WebSocket handler calls one
method.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from server.models import EpisodeStatus, utcnow
from server.player import protocol as p
from server.player import starts
from server.player._context import SessionContext
from server.player._phase import ACTIVE, Phase, PlayError, failure_text, wrong_state
from server.player._store import SessionStore
from server.player._timers import Countdown, Tasks
from server.player.env_link import EnvLink
from server.player.episode_run import EpisodeRun
from server.player.lanes import PageSockets
from server.player.outbox import Frame, Outbox
from server.player.phone import PhoneLink
from server.player.protocol import AckMsg
from server.player.stream import EpisodeStream
from server.player.views import ended_message, episode_view
from server.recording.format import END_PARTICIPANT, now_ms
from server.runtime import StepEvent, WorkerError
from server.runtime.catalog import allows_end
from server.services.crowd import episodes
from server.study_spec import EnvironmentSpec

log = logging.getLogger(__name__)
__all__ = ["ACTIVE", "LiveSession", "Phase", "PlayError", "SessionContext"]


class LiveSession:
    """A player's session; messages come from :mod:`server.player.connection`."""

    def __init__(self, session_id: str, context: SessionContext) -> None:
        self.id, self.context = session_id, context
        self.phase = Phase.idle
        self.lock = asyncio.Lock()
        self.run: EpisodeRun | None = None
        self.episodes_started = 0
        self.lost_connection = False
        self.sockets = PageSockets(context.settings.stream_lanes)
        self.env = EnvLink(on_failure=self.fail)
        self.store = SessionStore(session_id, context)
        self.phone = PhoneLink(session_id, context.principal.participant_id, context.spec.name)
        self.stream = EpisodeStream(self.sockets, self.env, self.phone)
        self._tasks = Tasks()
        self._pause = Countdown(self._tasks)  # a pause (or ready gate) left too long
        self._grace = Countdown(self._tasks)  # a lost connection not resumed in time

    # -- what others read -------------------------------------------------------------------
    study_id = property(lambda self: self.context.study_id)
    spec = property(lambda self: self.context.spec)
    principal = property(lambda self: self.context.principal)
    settings = property(lambda self: self.context.settings)
    outbox = property(lambda self: self.sockets.outbox, doc="The play socket's, if connected.")
    lane_key = property(lambda self: self.sockets.key)
    worker = property(lambda self: self.env.worker)
    env_id = property(lambda self: self.env.env_id)

    def send(self, message: dict[str, Any]) -> None:
        """A control message to the player, if connected."""
        self.sockets.send(message)

    def _expect(self, phases: Any, what: str) -> None:
        """:func:`wrong_state` unless the session is in one of ``phases``."""
        if self.phase not in phases:
            raise wrong_state(self.phase, what)

    async def serve(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run one client message's method under the lock (none once the session is over)."""
        async with self.lock:
            if self.phase == Phase.closed:
                raise PlayError("closed", "the session is over")
            await work()

    # -- connection -------------------------------------------------------------------------
    async def attach(self, outbox: Outbox, resumed: bool, session_not_found: bool = False) -> None:
        """A connection takes over the session: hello, env, episode and its last frame."""
        async with self.lock:
            self.sockets.take(outbox)
            # taken over from a live connection: paused until the page says go on
            if resumed and self.phase == Phase.playing and await self._pause_worker():
                self.lost_connection = True
            self._grace.disarm()
            outbox.send(await self.store.hello(resumed, session_not_found, self.phase, self.run,
                                               self.sockets.offer()))  # fmt: skip
            self.stream.greet(outbox, self.run, self.spec, ended=self.phase == Phase.ended)
            if self.lost_connection and self.phase == Phase.paused:
                self._arm_pause()
            self.lost_connection = False

    async def detach(self, outbox: Outbox) -> None:
        """The connection went away: pause, and abandon unless it comes back in time."""
        async with self.lock:
            if self.outbox is not outbox or self.phase == Phase.closed:
                return
            self.sockets.take(None)
            if self.phase == Phase.playing:
                await self._pause_worker()
            self.lost_connection = True
            self._grace.arm(self.settings.reconnect_grace_s, self._grace_expired)

    async def _grace_expired(self) -> None:
        async with self.lock:
            self._grace.expired()
            if self.outbox is None:  # nobody came back
                await self.shutdown("the connection was not resumed in time")

    def attach_lane(self, outbox: Outbox) -> bool:
        """One more socket of the page carries frames in turn; False when none is wanted."""
        return self.sockets.attach_lane(outbox)

    def detach_lane(self, outbox: Outbox) -> None:
        """A lane of the page went away."""
        self.sockets.detach_lane(outbox)

    def frame_sent(self, frame: Frame) -> None:
        """Called by the sender as it hands a frame to the socket."""
        self.stream.sent(self.run, frame)

    def _arm_pause(self) -> None:
        """(Re)start the countdown after which a pause abandons the episode."""
        self._pause.arm(self.spec.pause_timeout_s, self._pause_expired)

    async def _pause_expired(self) -> None:
        async with self.lock:
            self._pause.expired()
            if self.phase in (Phase.paused, Phase.ready):
                await self._abandon("pause_timeout")
                message = "The pause lasted too long: the episode was abandoned."
                self.send({"type": "error", "code": "pause_timeout", "message": message})

    # -- messages ---------------------------------------------------------------------------
    async def start(self, env_id: str | None, task_id: str | None = None) -> None:
        """Start an episode of one environment (a participant's: :func:`starts.choose_env`),
        of ``task_id`` where the environment lets players choose its task."""
        self._expect((Phase.idle,), "start an episode")
        state = await self.store.participant_state()  # None: a designer test-playing
        env_id, extra = starts.choose_env(self.spec, state, env_id)
        self.phase = Phase.starting
        try:
            await self.begin(env_id, extra=extra, task_id=task_id)
        finally:
            if self.phase == Phase.starting:
                self.phase = Phase.idle

    async def begin(self, env_id: str, extra: bool = False, task_id: str | None = None) -> None:
        """Reserve the episode and draw its task (a refused one answers at once), then start
        or reuse the worker for ``env_id`` (and the task's settings) and reset the env."""
        if not self.env.reusable_for(env_id):
            await self.env.close(self.settings.worker_timeout_s)
            if not await self.store.has_room():
                raise PlayError("busy", "the server is at capacity; try again in a minute")
        row, seed, task = await self.store.reserve(env_id, extra, task_id)
        env = self.spec.environment(env_id).for_task(task)
        if not self.env.runs(env):  # none runs, or one built for another task's settings
            await self.env.close(self.settings.worker_timeout_s)
            try:
                await self._start_worker(env)
            except WorkerError as exc:
                raise await self.store.start_failed(env_id, row.id, exc) from None
        self.episodes_started += 1
        run = EpisodeRun(id=row.id, index=self.episodes_started, env_id=env_id, seed=seed,
                         task=task)  # fmt: skip
        self.run = run
        assert self.worker is not None
        start = self.worker.begin_episode(run.id, seed, paused=True, task=task)
        began, first = await self.env.attempt(start)
        if not began:
            return
        # the ready gate: the first frame, then nothing until ``go`` (a gate left standing
        # longer than a pause may is abandoned, which releases the quota reservation)
        self.phase = Phase.ready
        self._arm_pause()
        countdown = env.countdown_s if env.mode == "async" else 0
        self.send({"type": "episode_started", "episode": episode_view(run, self.spec),
                   "ready_gate": True, "countdown_s": countdown})  # fmt: skip
        assert first is not None
        self.stream.show(run, first)

    async def _start_worker(self, env: EnvironmentSpec) -> None:
        worker = await self.env.start(env, self.settings, self.study_id, self.context.warm)
        if env.mode == "async":
            self._tasks.spawn(self.env.pump(worker, self.lock, partial(self._on_event, clock=True)))
        self.send(self.env.view(self.spec) or {})

    async def go(self) -> None:
        """Past the ready gate: the episode starts (async: its clock runs)."""
        run = self.run
        if self.phase != Phase.ready or run is None or self.worker is None:
            raise wrong_state(self.phase, "start playing")
        if not await self._resume_clock():
            return
        await self.store.call(episodes.mark_started, run.id)
        self.phase = Phase.playing
        self.send({"type": "started", "episode_id": run.id})

    async def pause(self) -> None:
        """Stop the clock (:func:`server.player.handlers.on_pause` says how it answers)."""
        if self.phase == Phase.paused:
            left = self._pause.left_s(self.spec.pause_timeout_s)
            self.send({"type": "paused", "timeout_s": left})
            return
        if self.phase == Phase.ended:
            return
        self._expect((Phase.playing,), "pause")
        if await self._pause_worker():
            self._arm_pause()
            self.send({"type": "paused", "timeout_s": self.spec.pause_timeout_s})

    async def resume(self) -> None:
        """Restart the clock (while playing: answered with ``resumed``, nothing changes)."""
        if self.phase == Phase.playing:
            self.send({"type": "resumed"})
            return
        if self.phase == Phase.ended:
            return  # crossed the episode's end: its save question is on its way
        if self.phase != Phase.paused or self.worker is None:
            raise wrong_state(self.phase, "resume")
        if not await self._resume_clock():
            return
        self.phase = Phase.playing
        self.send({"type": "resumed"})

    async def _resume_clock(self) -> bool:
        """Drop the pause timer, restart the worker's clock; False: the worker failed."""
        assert self.worker is not None
        self._pause.disarm()
        return (await self.env.attempt(self.worker.resume()))[0]

    async def _pause_worker(self) -> bool:
        """Stop the worker's clock, save progress, enter ``paused``; False: the worker failed."""
        assert self.worker is not None and self.run is not None
        if not (await self.env.attempt(self.worker.pause()))[0]:
            return False
        await self.store.progress(self.run)
        self.phase = Phase.paused
        return True

    async def cancel(self) -> None:
        """End the running episode as ``canceled`` (its steps are kept)."""
        self._expect(ACTIVE, "cancel")
        await self._stop(EpisodeStatus.canceled, "canceled")

    async def end_episode(self) -> None:
        """The participant is done: finalize the log here (every step the worker recorded
        is kept, even those whose frames are still on their way), then ask the save question
        as an ending does. An ending the environment reached first, as the two crossed,
        stays the environment's."""
        run = self.run
        if self.phase == Phase.ended:
            raise PlayError("already_ended", "the episode is over already: answer the save "
                            "question")  # fmt: skip
        self._expect((Phase.ready, Phase.playing, Phase.paused), "end an episode")
        assert run is not None
        if not allows_end(self.spec.environment(run.env_id)):
            raise PlayError("not_allowed", "this game's episodes end by themselves; to stop, "
                            "cancel the episode")  # fmt: skip
        if self.phase == Phase.ready or run.step == 0:
            raise PlayError("nothing_to_end", "no step has been taken yet: play first, or "
                            "cancel the episode")  # fmt: skip
        summary = await self.env.end_episode(run, END_PARTICIPANT, self.store,
                                             self.settings.worker_timeout_s)  # fmt: skip
        ended_before = summary is not None and summary.get("ended_before")
        reason = str(summary.get("end_reason")) if summary and ended_before else END_PARTICIPANT
        run.end_reason, run.ended_at = reason, utcnow()
        self._pause.disarm()
        self.phase = Phase.ended
        await self.store.progress(run)
        self.send(ended_message(run, self.spec))

    async def save(self, keep: bool, outcome: str | None) -> None:
        """Answer the save question: ``completed`` or ``rejected``."""
        run = self.run
        if self.phase != Phase.ended or run is None:
            raise wrong_state(self.phase, "save")
        if outcome is not None and not self.spec.asks_outcome(run.env_id):
            raise PlayError("not_asked", "this environment does not ask for an outcome")
        if outcome is not None and not keep:
            raise PlayError("invalid", "an outcome goes with keep: true (a kept episode)")
        status = EpisodeStatus.completed if keep else EpisodeStatus.rejected
        await self._finish(run, status, player_outcome=outcome)

    async def end_session(self) -> None:
        """End the play session (between episodes)."""
        self._expect((Phase.idle,), "end the session (cancel or save the episode first)")
        await self.shutdown("ended by the player")

    async def setting(self, name: str, value: Any) -> None:
        """A stream setting: ``speed``, ``quality`` or ``camera`` (:meth:`EnvLink.setting`)."""
        env = self.spec.environment(self.env_id) if self.env_id else None
        self.send(await self.env.setting(name, value, env))

    async def phone_pair(self, origin: str) -> None:
        """A new pairing for the panel (:meth:`PhoneLink.pairing`)."""
        self.send(await self.phone.pairing(origin, self.settings, self.store, self.spec))

    # -- inputs and frames ------------------------------------------------------------------
    async def input(self, raw: dict[str, Any], seq: int | None, timing: dict[str, Any]) -> None:
        """The page's input (``timing``: sent, received, step seen): sync, step with it;
        async, held for the next tick."""
        if not self.sockets.fresh_input(seq):
            return  # its other copy came first (lanes)
        if self.phase == Phase.ended:
            return  # pressed as the game ended (the two crossed): nothing to step, no error
        if self.phase != Phase.playing or self.run is None or self.worker is None:
            raise wrong_state(self.phase, "send input")
        await self._forward(timing, raw)

    async def _forward(self, timing: dict[str, Any], raw: dict[str, Any] | None = None) -> None:
        assert self.run is not None
        forwarded, event = await self.env.attempt(self.stream.forward(self.run, timing, raw))
        if forwarded and event is not None:  # sync: stepped (async: applied at the next tick)
            await self._on_event(event)

    async def ack(self, msg: AckMsg) -> None:
        """A frame was drawn: latency, figures now and then (:meth:`EpisodeStream.ack`)."""
        await self.stream.ack(self.run, self.spec, self.phase == Phase.playing, msg)

    def phone_confirm(self, accept: bool) -> None:
        """Let a second phone replace the connected one (or refuse it)."""
        self.phone.confirm(accept)

    async def phone_attach(self, outbox: Outbox, nonce: str) -> bool:
        """The phone's socket joins (a second phone once accepted); False: refused or over."""
        if not await self.phone.await_turn(outbox, nonce, self.send):
            return False
        async with self.lock:
            return self.phone.join(outbox, nonce, self.phase, self.send)

    async def phone_input(self, outbox: Outbox, axes: list[float], keys: list[str],
                          lost: bool = False) -> None:  # fmt: skip
        """The phone's new input (``lost``: it went away): async envs take it at their next
        tick (a sync one steps with the page's next input)."""
        async with self.lock:
            if not self.phone.update(outbox, axes, keys, lost):
                return
            if self.phase == Phase.playing and self.env.is_async:
                now = now_ms()  # the phone's clock is not the page's: stamped as it arrives
                await self._forward({"input_sent": now, "input_recv": now, "seen_step": -1})
            if lost:
                self.send(self.phone.status())

    async def _on_event(self, event: StepEvent, clock: bool = False) -> None:
        """A step of the current episode: show its frame; at the last one, ask to save."""
        run = self.run
        if run is None or event.episode_id != run.id or self.phase not in ACTIVE:
            return
        self.stream.took(run, event, clock, designer=self.principal.participant_id is None)
        if event.done:
            run.end_reason, run.ended_at = event.end_reason, utcnow()
            run.success = event.success
            self._pause.disarm()
            self.phase = Phase.ended
            await self.store.progress(run)
            self.send(ended_message(run, self.spec))

    # -- endings ----------------------------------------------------------------------------
    async def _finish(self, run: EpisodeRun, status: EpisodeStatus, **ending: Any) -> None:
        """Write the episode's final status, go back to ``idle`` and tell the player."""
        message = await self.store.finish(run, status, **ending)
        self.run, self.phase = None, Phase.idle
        self._pause.disarm()
        self.send(await message())

    async def _stop(self, status: EpisodeStatus, reason: str) -> None:
        """End the running episode early (cancel, abandon): finalize its log, then the row."""
        run = self.run
        assert run is not None
        await self.env.end_episode(run, reason, self.store, self.settings.worker_timeout_s)
        await self._finish(run, status, end_reason=reason)

    async def _abandon(self, reason: str) -> None:
        if self.run is not None and self.phase in (*ACTIVE, Phase.ended):
            await self._stop(EpisodeStatus.abandoned, reason)

    async def fail(self, exc: BaseException) -> None:
        """The environment crashed or its worker died: the episode is ``failed``."""
        what, text = failure_text(exc)
        log.warning("environment failure in session %s: %s", self.id, what)
        await self.env.close(self.settings.worker_timeout_s)
        run = self.run
        if run is not None and self.phase != Phase.ended:
            run.counted(await self.store.log_totals(run))
            await self._finish(run, EpisodeStatus.failed, error=text, end_reason="failed")
            self.send(await self.store.failed_message(run, text))
        self.phase = Phase.idle if self.phase != Phase.closed else Phase.closed

    async def shutdown(self, reason: str, end_reason: str = "disconnected") -> None:
        """End the session (lock held): abandon a running episode, stop the worker."""
        if self.phase == Phase.closed:
            return
        await self._abandon(end_reason)
        await self.env.close(self.settings.worker_timeout_s)
        self.phase = Phase.closed
        self._pause.disarm()
        # revoke, then tell: once the phone hears the session ended, no code of it pairs
        await self.store.end_session()
        self.phone.end(reason)
        self.sockets.end(reason)
        self.context.on_closed(self)

    async def close(self, reason: str) -> None:
        """End the session: abandon a running episode, stop the worker, stamp the row."""
        async with self.lock:
            await self.shutdown(reason)

    async def taken_over(self) -> None:
        """The participant took the session over on another replica: close the socket with
        4000 (as a takeover here does) and end the session, its episode abandoned."""
        async with self.lock:
            if self.phase == Phase.closed or not await self.store.lease_lost():
                return  # over already, or a tab here took the lease back
            log.info("session %s was taken over on another replica", self.id)
            if self.outbox is not None:
                self.outbox.close(p.CLOSE_REPLACED, "the session was opened elsewhere")
            await self.shutdown("the session was opened elsewhere", end_reason="taken_over")
