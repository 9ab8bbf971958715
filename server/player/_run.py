"""Bookkeeping of one running episode: progress, frame acks and input latency."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from server.services.review.quality import InputCounts

_KEEP_STEPS = 256  # frame-sent times kept for steps whose ack has not come yet


@dataclass
class EpisodeRun:
    """One episode as the player session tracks it."""

    id: str
    index: int  # 1, 2, ... within the play session (the frame header's episode index)
    env_id: str
    seed: int | None
    started: float = field(default_factory=time.monotonic)
    step: int = 0
    return_: float = 0.0
    end_reason: str | None = None
    ended_at: datetime | None = None
    frames_dropped: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    # the held input at each action (idle share, presses per second: quality.py)
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
