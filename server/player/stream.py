"""The running episode's inputs in and frames out (:class:`EpisodeStream`, owned by the live
session): the page's input merged with the phone's and handed to the worker, each step's
frame to the page's sockets in turn, the page's acks (latency, the adaptive stream)."""

from __future__ import annotations

import contextlib
from typing import Any

from server.player import protocol as p
from server.player.env_link import EnvLink
from server.player.episode_run import EpisodeRun
from server.player.lanes import PageSockets
from server.player.outbox import Frame, Outbox
from server.player.phone import PhoneLink
from server.player.protocol import AckMsg
from server.player.views import ended_message
from server.recording.format import now_ms
from server.recording.signals import held_controls, percentile
from server.runtime import StepEvent, WorkerError
from server.runtime.autonomy import failure_kind
from server.study_spec import StudySpec

ACK_FLUSH = 30  # async mode: hand acks to the worker at least this often (in frames)


class EpisodeStream:
    """Inputs to the worker, frames to the page, acks back; worker errors propagate (what
    they mean for the episode is the session's to decide)."""

    def __init__(self, sockets: PageSockets, env: EnvLink, phone: PhoneLink) -> None:
        self.sockets, self.env, self.phone = sockets, env, phone
        self.page_input: dict[str, Any] = {}  # the player page's latest input

    async def forward(self, run: EpisodeRun, timing: dict[str, Any],
                      page_input: dict[str, Any] | None = None) -> StepEvent | None:  # fmt: skip
        """Hand the page's latest input (``page_input``, when a new one came), with the
        phone's, to the worker: sync, the step it took; async, None (applied at a tick)."""
        if page_input is not None:
            self.page_input = page_input
        worker = self.env.worker
        assert worker is not None
        raw = self.phone.merged(self.page_input)
        event = await worker.send_input(raw, timing, run.take_acks())
        run.forwarded(
            held_controls(raw), timing["input_sent"], None if event is None else event.step
        )
        return event

    def took(self, run: EpisodeRun, event: StepEvent, clock: bool, designer: bool) -> None:
        """A step of the running episode (``clock``: pushed by the async clock): count it,
        show its frame; with shared autonomy say once that the policy stopped driving and
        why (``reason``: ``slow`` or ``failed``; the error itself only to a ``designer``)."""
        if run.took(event, clock):
            message = f"The policy stopped driving: {event.policy_error}" if designer else None
            self.sockets.send({"type": "policy_failed", "episode_id": run.id,
                               "reason": failure_kind(event.policy_error or ""),
                               "message": message})  # fmt: skip
        self.show(run, event)

    def greet(self, outbox: Outbox, run: EpisodeRun | None, spec: StudySpec,
              ended: bool) -> None:  # fmt: skip
        """What a connection that just attached sees after ``hello``: the env, the phone,
        the running episode's last frame and, ``ended``, its save question."""
        if (env := self.env.view(spec)) is not None:
            outbox.send(env)
        if self.phone.nonce is not None:
            outbox.send(self.phone.status())
        if run is not None and run.last_frame is not None:
            outbox.frame(Frame(run.index, run.step, run.last_frame))
        if ended and run is not None:
            outbox.send(ended_message(run, spec))

    def sent(self, run: EpisodeRun | None, frame: Frame) -> None:
        """The sender hands ``frame`` to its socket now (stamped for the latency)."""
        if run is not None and run.index == frame.episode:
            run.frame_sent(frame.step, now_ms())

    def show(self, run: EpisodeRun, event: StepEvent) -> None:
        """The step's frame to the page's next socket (none: dropped, and counted)."""
        if not event.frame:
            return  # recorded, not streamed: the adaptive stream's lower frame rate
        data = p.pack_frame(
            run.index, event.step, now_ms(), event.return_, event.frame, event.control
        )
        run.last_frame = data
        run.step = max(run.step, event.step)
        outbox = self.sockets.next_frame_outbox()
        if outbox is None:
            run.frames_dropped += 1
            return
        dropped = outbox.frame(Frame(run.index, event.step, data))
        if dropped is not None and dropped.episode == run.index:
            run.frames_dropped += 1

    async def ack(self, run: EpisodeRun | None, spec: StudySpec, playing: bool,
                  msg: AckMsg) -> None:  # fmt: skip
        """The page drew the frame of ``msg.step``: its latency; now and then the figures for
        the page; the adaptive stream's next level (``playing``: the episode's clock runs).
        (Its socket's frame window was settled by the connection it came over.)"""
        if msg.skipped or run is None or msg.episode != run.index or msg.step > run.step:
            return  # overtaken on another socket (lanes), a late ack, or nonsense
        env, step, drawn_ms = spec.environment(run.env_id), msg.step, msg.drawn_ms
        sent_ms = run.frame_drawn(step, drawn_ms)
        if sent_ms is not None and env.adaptive_quality and playing and self.env.worker:
            frame_outboxes = self.sockets.frame_outboxes()
            setting = await self.env.adapt(
                env, now_ms() - sent_ms, run.frames_dropped, frame_outboxes
            )
            if setting is not None:
                self.sockets.send(setting)
        if run.stats_due():
            recent = percentile(run.latencies_ms[-60:], 50)
            self.sockets.send(
                {"type": "stats", "latency_ms": recent, "frames_dropped": run.frames_dropped}
            )
        if playing and self.env.is_async and len(run.acks) >= ACK_FLUSH:
            assert self.env.worker is not None
            with contextlib.suppress(WorkerError):  # the pump reports a dead worker
                await self.env.worker.send_acks(run.take_acks())
