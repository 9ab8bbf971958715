"""The app's end of a worker's socket pair: ``multiprocessing.Connection``'s framing, read
and written by the event loop (:class:`Wire`), so the worker keeps a plain ``Connection``."""

from __future__ import annotations

import asyncio
import pickle
import struct
from collections.abc import Callable
from typing import Any


def settle(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)


# A step event crosses as a tuple of these fields, in this order (StepEvent's; a tuple
# pickles and unpickles in a third of a dict's time, and the app builds the event from it
# without renaming keys: docs/performance.md, "One encoding, one write").
EVENT_FIELDS = ("episode_id", "step", "reward", "return_", "terminated", "truncated",
                "end_reason", "frame", "worker_ms", "work_ms", "control", "interventions",
                "policy_error", "success")  # fmt: skip
WORK_MS = EVENT_FIELDS.index("work_ms")

_HEADER = struct.Struct("!i")  # multiprocessing.Connection's framing: a signed length ...
_LONG_HEADER = struct.Struct("!Q")  # ... or -1 and then an unsigned 64-bit one
_MAX_SHORT = 0x7FFFFFFF


def frame_message(message: Any) -> bytes:
    """``message`` pickled and framed exactly as ``Connection.send`` frames it."""
    body = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    if len(body) > _MAX_SHORT:
        return _HEADER.pack(-1) + _LONG_HEADER.pack(len(body)) + body
    return _HEADER.pack(len(body)) + body


class Wire(asyncio.Protocol):
    """The app's end of the worker's socket pair, read and written by the event loop.

    The worker keeps a plain blocking :class:`Connection`; this side never blocks: whatever
    the socket holds is buffered and each complete message is dispatched, however many
    reads it took to arrive (a 32 KiB frame comes in pieces), and writes are queued by the
    transport. (A blocking ``Connection.recv`` on a descriptor the loop watches is not an
    option: uvloop makes watched descriptors non-blocking, so a message that had not fully
    arrived read as a dead worker.)
    """

    def __init__(self, on_message: Callable[[Any], None], on_dead: Callable[[], None]) -> None:
        self.on_message = on_message
        self.on_dead = on_dead
        self.buffer = bytearray()
        self.transport: Any = None  # an asyncio.Transport (uvloop's does not subclass it)
        self.drained: asyncio.Future[None] | None = None  # set while writing is paused

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        if buffer:  # the rest of a message that came in pieces
            buffer += data
            view: bytes | bytearray = buffer
        else:  # usually whole messages: parse them where they are, no copy
            view = data
        start, end = 0, len(view)
        while end - start >= 4:
            (size,) = _HEADER.unpack_from(view, start)
            head = 4
            if size == -1:
                if end - start < 12:
                    break
                (size,) = _LONG_HEADER.unpack_from(view, start + 4)
                head = 12
            if end - start < head + size:
                break
            message = pickle.loads(view[start + head : start + head + size])
            start += head + size
            self.on_message(message)
        if view is buffer:
            del buffer[:start]
        elif start < end:
            self.buffer = bytearray(view[start:])

    def connection_lost(self, exc: Exception | None) -> None:
        if self.drained is not None:
            settle(self.drained)
        self.on_dead()

    def pause_writing(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.drained is not None:
            settle(self.drained)
            self.drained = None
