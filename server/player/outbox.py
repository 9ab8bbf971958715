"""Per-connection output queue and input rate limiting.

Control messages are never dropped; frames sit in a small bounded queue and, when the
client falls behind, the oldest waiting frame is dropped (and counted) - recording is not
affected, the worker has already written the step.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

MAX_QUEUED_FRAMES = 2


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

    async def get(self) -> str | Frame | Close:
        """The next thing to send: control messages first, then the oldest frame."""
        while True:
            if self._control:
                return self._control.popleft()
            if self._frames:
                return self._frames.popleft()
            self._wake.clear()
            await self._wake.wait()


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
