"""Per-connection output queue and input rate limiting.

Control messages are never dropped; frames sit in a small bounded queue and, when the
client falls behind, the oldest waiting frame is dropped (and counted) - recording is not
affected, the worker has already written the step. With the adaptive stream, frames are
also ack-clocked (:class:`FrameWindow`): a narrow link then queues frames here, where the
newest replaces the oldest, instead of seconds of them in the network's buffers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

MAX_QUEUED_FRAMES = 2
SLACK_MS = 60.0  # frames in flight: as many as the best ack delay plus this holds
MIN_IN_FLIGHT = 2
STALE_MS = 1000.0  # a frame unacked this long stops counting (the page skipped drawing it)


def _now_ms() -> float:
    return time.monotonic() * 1000


class FrameWindow:
    """How many frames may be on their way to the player over one socket at once: those its
    link's best ack delay (round trip plus drawing, plus :data:`SLACK_MS`) holds at the
    stream's frame rate (at least :data:`MIN_IN_FLIGHT`), shared out between the page's
    ``sockets`` (lanes), at least one each. An ack of one of the socket's frames settles it
    and every earlier one of that socket."""

    def __init__(self) -> None:
        self.best_ms: float | None = None
        self.period_ms = 1000.0
        self.sockets = 1
        self.flight: deque[tuple[tuple[int, int], float]] = deque()  # ((episode, step), sent)

    @property
    def limit(self) -> int:
        best = 0.0 if self.best_ms is None else self.best_ms
        page = max(MIN_IN_FLIGHT, math.ceil((best + SLACK_MS) / self.period_ms))
        return max(1, math.ceil(page / self.sockets))

    def sent(self, frame: Frame, now_ms: float) -> None:
        self.flight.append(((frame.episode, frame.step), now_ms))

    def clock(self, delay_ms: float, period_ms: float, sockets: int) -> None:
        """One more ack delay of the page (any socket), the stream's time between frames,
        and how many sockets carry them."""
        self.best_ms = delay_ms if self.best_ms is None else min(self.best_ms, delay_ms)
        self.period_ms = period_ms
        self.sockets = sockets

    def settle(self, episode: int, step: int) -> None:
        """The page got this socket's frame ``step`` (drawn or skipped), so every earlier one
        too (a socket delivers in order)."""
        while self.flight and self.flight[0][0] <= (episode, step):
            self.flight.popleft()

    def open(self, now_ms: float) -> bool:
        """Whether one more frame may go now."""
        while self.flight and now_ms - self.flight[0][1] > STALE_MS:
            self.flight.popleft()
        return len(self.flight) < self.limit

    def reopens_in_s(self, now_ms: float) -> float:
        """Seconds until the oldest frame in flight goes stale (the window opens without an
        ack)."""
        return max(0.0, self.flight[0][1] + STALE_MS - now_ms) / 1000 if self.flight else 0.0


@dataclass(frozen=True, slots=True)
class Frame:
    """A binary frame waiting to be sent."""

    episode: int
    step: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Close:
    """Close the socket after everything queued before it."""

    code: int
    reason: str


class Outbox:
    """What one connection still has to send; drained by the connection's sender task."""

    def __init__(self, max_frames: int = MAX_QUEUED_FRAMES) -> None:
        self.max_frames = max_frames
        self._control: deque[str | Close] = deque()
        self._frames: deque[Frame] = deque()
        self._wake = asyncio.Event()
        self.closing = False
        self.window: FrameWindow | None = None  # ack-clocked frames (the adaptive stream)

    def send(self, message: dict[str, Any]) -> None:
        """Queue a control message (JSON)."""
        if not self.closing:
            self._control.append(json.dumps(message, separators=(",", ":")))
            self._wake.set()

    def error(self, code: str, message: str, for_: str | None = None) -> None:
        """Queue an ``error`` message naming the problem (and the message type it answers)."""
        error = {"type": "error", "code": code, "message": message}
        if for_ is not None:
            error["for"] = for_
        self.send(error)

    def frame(self, frame: Frame) -> Frame | None:
        """Queue a frame; returns the frame dropped to make room, if any."""
        if self.closing:
            return frame
        dropped = None
        if len(self._frames) >= self.max_frames:
            dropped = self._frames.popleft()
        self._frames.append(frame)
        self._wake.set()
        return dropped

    def close(self, code: int, reason: str) -> None:
        """Close after the queued control messages (waiting frames are dropped)."""
        if not self.closing:
            self._control.append(Close(code, reason[:120]))
            self.closing = True
            self._frames.clear()
            self._wake.set()

    def clock(self, delay_ms: float, period_ms: float, sockets: int = 1) -> None:
        """The player drew a frame ``delay_ms`` after it was sent; ``period_ms``: the
        stream's time between frames, over ``sockets`` sockets (this one and the page's
        other lanes). From the first call on, frames are ack-clocked."""
        if self.window is None:
            self.window = FrameWindow()
        self.window.clock(delay_ms, period_ms, sockets)
        self._wake.set()

    def settle(self, episode: int, step: int) -> None:
        """The page acked frame ``step`` of this socket (drawn or skipped)."""
        if self.window is not None:
            self.window.settle(episode, step)
            self._wake.set()

    def has_room(self) -> bool:
        """Whether a frame queued now goes at once (no frame window, or one with room)."""
        return self.window is None or (not self._frames and self.window.open(_now_ms()))

    async def get(self) -> str | Frame | Close:
        """The next thing to send: control messages first, then the oldest frame (once the
        frame window, if any, has room)."""
        while True:
            if self._control:
                return self._control.popleft()
            wait = None
            if self._frames:
                now = _now_ms()
                if self.window is None or self.window.open(now):
                    frame = self._frames.popleft()
                    if self.window is not None:
                        self.window.sent(frame, now)
                    return frame
                wait = self.window.reopens_in_s(now)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()


def next_turn(boxes: list[Outbox], turn: int) -> int:
    """Which of a page's sockets (``boxes``) carries the next frame, from the one whose turn
    it is: the first in turn that has room, or the one in turn when none has. A socket whose
    frame window is full (its acks stopped: a retransmission stall) is so passed over while
    another has room, and a stall holds up none of the frames sent after it showed."""
    for offset in range(len(boxes)):
        if boxes[(turn + offset) % len(boxes)].has_room():
            return (turn + offset) % len(boxes)
    return turn % len(boxes)


class RateLimiter:
    """A token bucket: ``rate`` messages per second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def allow(self) -> bool:
        """Take one token; False when the bucket is empty."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False
