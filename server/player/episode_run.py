"""Bookkeeping of one running episode: progress, frame acks and input latency."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from server.models import EpisodeStatus, Outcome, ended_by
from server.recording.format import now_ms
from server.recording.signals import InputCounts
from server.runtime import StepEvent
from server.runtime.autonomy import FRAME_POLICY
from server.services.crowd.episodes import EpisodeResult
from server.study_spec import TaskSpec

_KEEP_STEPS = 256  # frame-sent times kept for steps whose ack has not come yet


@dataclass
class EpisodeRun:
    """One episode as the player session tracks it."""

    id: str
    index: int  # 1, 2, ... within the play session (the frame header's episode index)
    env_id: str
    seed: int | None
    task: TaskSpec | None = None  # the task it drew (its instruction is on the player)
    started: float = field(default_factory=time.monotonic)
    step: int = 0
    return_: float = 0.0
    end_reason: str | None = None
    ended_at: datetime | None = None
    success: bool | None = None  # the environment's report at the last step (None: none)
    frames_dropped: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    # the held input at each action (idle share, presses per second: recording/signals.py)
    inputs: InputCounts = field(default_factory=InputCounts)
    held: frozenset[str] = frozenset()  # the controls the input being applied holds
    pending_held: frozenset[str] = frozenset()  # async: of the input not yet applied
    counted_step: int = 0  # actions counted so far (the last step counted)
    driven_step: int = 0  # shared autonomy: the last step whose driver was counted
    policy_error: str | None = None  # why the policy stopped driving (shared autonomy)
    last_frame: bytes | None = None
    # client time of the input not yet applied (async) / of the input applied at a step
    pending_input_ms: float | None = None
    forwarded_ms: float = 0.0  # server time the pending input went to the worker
    input_ms: dict[int, float] = field(default_factory=dict)
    sent_ms: dict[int, float] = field(default_factory=dict)
    acks: list[list[float | int | None]] = field(default_factory=list)
    stats_at: float = 0.0  # when the player last got a latency figure (monotonic)

    def stats_due(self, every_s: float = 1.0) -> bool:
        """True (and restarts the period) when the player should get fresh figures."""
        now = time.monotonic()
        if self.latencies_ms and now - self.stats_at >= every_s:
            self.stats_at = now
            return True
        return False

    @property
    def steps(self) -> int:
        """Recorded timesteps so far (the first observation included)."""
        return self.step + 1

    def count_actions(self, step: int) -> None:
        """Steps up to ``step`` were taken with the held input (once each)."""
        self.inputs.add(self.held, step - self.counted_step)
        self.counted_step = max(self.counted_step, step)

    def took(self, event: StepEvent, clock: bool) -> bool:
        """Count a step of this episode (``clock``: pushed by the async clock) and who drove
        it; True when it says, first, that the policy stopped driving (shared autonomy)."""
        # async: the held input counts as applied at the first step the worker began after
        # it was forwarded (a step already under way when it arrived did not use it)
        if clock and self.pending_input_ms is not None:
            if event.worker_ms - event.work_ms >= self.forwarded_ms:
                self.count_actions(event.step - 1)  # taken with the input held before
                self.held = self.pending_held
                self.applied(event.step, self.pending_input_ms)
        self.count_actions(event.step)
        failed = False
        if event.control:
            if event.step > self.driven_step:
                self.inputs.drove(event.control == FRAME_POLICY, event.interventions)
                self.driven_step = event.step
            if event.policy_error and self.policy_error is None:
                self.policy_error = event.policy_error
                failed = True
        self.step, self.return_ = event.step, event.return_
        return failed

    def forwarded(self, held: frozenset[str], client_ms: float, stepped: int | None) -> None:
        """An input holding ``held`` went to the worker: applied at step ``stepped`` (sync),
        or (async, None) at a tick to come."""
        if stepped is None:
            self.pending_input_ms, self.forwarded_ms = client_ms, now_ms()
            self.pending_held = held
        else:
            self.held = held
            self.applied(stepped, client_ms)

    def result(self, status: EpisodeStatus, error: str | None = None,
               end_reason: str | None = None, player_outcome: str | None = None,
               ) -> EpisodeResult:  # fmt: skip
        """What the episode's row gets as it ends."""
        return EpisodeResult(
            status=status, steps=self.steps, total_reward=self.return_,
            end_reason=end_reason or self.end_reason, error=error,
            latencies_ms=self.latencies_ms, frames_dropped=self.frames_dropped,
            ended_at=self.ended_at, inputs=self.inputs, player_outcome=player_outcome,
            policy_error=self.policy_error,
            # who ended the steps: the environment or the participant when they had (an
            # abandon after the save question keeps theirs), else this early stop's reason
            ended_by=ended_by(self.end_reason or end_reason),
            env_outcome=None if self.success is None else
            Outcome.success if self.success else Outcome.failure,
        )  # fmt: skip

    def counted(self, totals: tuple[int, float] | None, summary: dict[str, Any] | None = None,
                ) -> None:  # fmt: skip
        """What the episode's log holds: ``totals`` (steps, return) read after its worker
        died, or the ``summary`` its worker gave as it finalized the log (async steps, even
        the last one, may still be on their way to us)."""
        if totals is not None:
            self.step, self.return_ = totals[0] - 1, totals[1]
        if summary:
            self.step = max(self.step, int(summary["num_steps"]) - 1)
            self.return_ = float(summary["total_reward"])

    def applied(self, step: int, client_ms: float | None) -> None:
        """The input sent at ``client_ms`` (client clock) took effect at ``step``."""
        self.step, self.pending_input_ms = max(self.step, step), None
        if client_ms is not None:
            self.input_ms[step] = client_ms
            self._prune(self.input_ms, step)

    def frame_sent(self, step: int, server_ms: float) -> None:
        """The frame of ``step`` left the server."""
        self.sent_ms[step] = server_ms
        self._prune(self.sent_ms, step)

    def frame_drawn(self, step: int, drawn_ms: float) -> float | None:
        """The client drew the frame of ``step``: queue the ack, measure the latency.
        Returns when that frame was sent (server clock), if known."""
        frame_sent = self.sent_ms.pop(step, None)
        self.acks.append([step, frame_sent, drawn_ms])
        sent = self.input_ms.pop(step, None)
        if sent is not None and drawn_ms >= sent:
            self.latencies_ms.append(drawn_ms - sent)
        return frame_sent

    def take_acks(self) -> list[list[float | int | None]]:
        """Acks not yet handed to the worker."""
        acks, self.acks = self.acks, []
        return acks

    @staticmethod
    def _prune(table: dict[int, float], step: int) -> None:
        if len(table) > _KEEP_STEPS:
            for old in [s for s in table if s < step - _KEEP_STEPS]:
                del table[old]
