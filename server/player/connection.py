"""One player WebSocket: a receiver task and a sender task, each cancelling the other.

The receiver validates each message (size, JSON, type, fields, rate) and hands it to the
live session; the sender drains the connection's :class:`Outbox` (control messages first,
frames bounded, oldest frame dropped when the client falls behind).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect

from server.player import protocol as p
from server.player.handlers import dispatch
from server.player.outbox import Close, Frame, Outbox, RateLimiter
from server.player.session import LiveSession

log = logging.getLogger(__name__)

INPUT_RATE = 120.0  # inputs per second (a 60 Hz gamepad poll plus keys) ...
INPUT_BURST = 120.0  # ... with bursts up to this many
MESSAGE_RATE = 400.0  # every message, acks included
MESSAGE_BURST = 400.0
MAX_DROPPED_INPUTS = 240  # inputs over the limit before the socket is closed as a flood
MAX_BAD_MESSAGES = 20  # malformed messages before the socket is closed
_background: set[asyncio.Future[None]] = set()


def _keep(task: asyncio.Future[None]) -> None:
    """Hold a reference until ``task`` ends, then collect its outcome."""
    _background.add(task)
    task.add_done_callback(_settled)


def _settled(task: asyncio.Future[None]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("player connection task failed", exc_info=task.exception())


class Connection:
    """Serve ``websocket`` (already accepted) for ``live`` until either side goes away."""

    ACCEPTS: frozenset[str] = frozenset(p.CLIENT_TYPES)

    def __init__(self, websocket: WebSocket, live: LiveSession) -> None:
        self.ws = websocket
        self.live = live
        self.outbox = Outbox()
        self.inputs = RateLimiter(INPUT_RATE, INPUT_BURST)
        self.messages = RateLimiter(MESSAGE_RATE, MESSAGE_BURST)
        self.dropped_inputs = 0
        self.bad_messages = 0

    async def serve(self, resumed: bool, session_not_found: bool = False) -> None:
        """Attach to the session, run both tasks, detach when one ends."""
        await self.live.attach(self.outbox, resumed, session_not_found)
        await self._run()

    async def _run(self) -> None:
        sender = asyncio.create_task(self._send_loop(), name="player-sender")
        receiver = asyncio.create_task(self._receive_loop(), name="player-receiver")
        try:
            done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if any(not t.cancelled() and t.exception() is not None for t in done):
                await self._fail()
        finally:
            # Nothing here awaits: the server may cancel this handler as soon as the client
            # is gone. Detaching waits for the session lock and may pause the worker, so it
            # runs in its own task, which that cancellation cannot cut short.
            for task in (sender, receiver):
                task.cancel()
                _keep(task)
            _keep(asyncio.ensure_future(self._detach()))

    async def _detach(self) -> None:
        await self.live.detach(self.outbox)

    async def _fail(self) -> None:
        """A bug in our own code: say so and close with 1011 (the episode is kept)."""
        message = {"type": "error", "code": "server_error",
                   "message": "The server failed to handle a message; your episode is kept. "
                              "Reload the page to go on."}  # fmt: skip
        with contextlib.suppress(Exception):  # the client may be gone already
            async with asyncio.timeout(2.0):
                await self.ws.send_text(json.dumps(message))
                await self.ws.close(p.CLOSE_SERVER_ERROR, "server error")

    async def _send_loop(self) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):  # client gone
            await self._send_all()

    async def _send_all(self) -> None:
        while True:
            item = await self.outbox.get()
            if isinstance(item, Close):
                await self.ws.close(item.code, item.reason)
                return
            if isinstance(item, Frame):
                # stamped as it is handed to the socket: after the send returns, the client
                # may already have drawn it (frame_sent_ms later than frame_drawn_ms)
                self.live.frame_sent(item)
                await self.ws.send_bytes(item.data)
            else:
                await self.ws.send_text(item)

    async def _receive_loop(self) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            if self.outbox.closing:
                continue
            if not self.messages.allow():
                self._abuse("flood", "too many messages")
                continue
            text = message.get("text")
            if text is None:
                self._bad("binary", "binary messages are not accepted: send JSON text")
                continue
            try:
                msg = p.parse_client(text)
            except p.BadMessage as exc:
                if exc.code == "too_large":
                    self._abuse(exc.code, exc.message)
                else:
                    self._bad(exc.code, exc.message, exc.for_)
                continue
            if msg.type not in self.ACCEPTS:
                self._bad("lane", f"a lane carries only {', '.join(sorted(self.ACCEPTS))}")
                continue
            if msg.type == "input" and not self._input_allowed():
                continue
            if msg.type == "ack":  # this socket's frame window (lanes: each its own)
                self.outbox.settle(msg.episode, msg.step)
            # shielded: a vanishing socket must not interrupt a state change half-way
            task = asyncio.ensure_future(dispatch(self.live, msg, self.outbox))
            await asyncio.shield(task)

    def _input_allowed(self) -> bool:
        if self.inputs.allow():
            if self.inputs.tokens >= self.inputs.burst - 1:
                self.dropped_inputs = 0
            return True
        self.dropped_inputs += 1
        # every dropped input is answered: a sync client waits for a frame or an error
        rate = f"inputs are limited to {self.inputs.rate:g} per second"
        self.outbox.error("rate_limited", rate, "input")
        if self.dropped_inputs > MAX_DROPPED_INPUTS:
            self._abuse("flood", "input flood")
        return False

    def _bad(self, code: str, message: str, for_: str | None = None) -> None:
        self.bad_messages += 1
        self.outbox.error(code, message, for_)
        if self.bad_messages > MAX_BAD_MESSAGES:
            self._abuse("too_many_errors", "too many invalid messages")

    def _abuse(self, code: str, message: str) -> None:
        log.info("closing player socket of session %s: %s", self.live.id, message)
        self.outbox.error(code, message)
        self.outbox.close(p.CLOSE_POLICY, message)


class LaneConnection(Connection):
    """One more socket of a player page (``settings.stream_lanes``): it carries frames in
    turn with the play socket, and a copy of each input (the first copy counts), so one
    socket's retransmission stall holds up a share of the frames, not the game."""

    ACCEPTS = frozenset({"input", "ack", "ping"})

    async def serve_lane(self) -> bool:
        """Run until either side goes away; False when the session wants no more lanes."""
        if not self.live.attach_lane(self.outbox):
            return False
        await self._run()
        return True

    async def _detach(self) -> None:
        self.live.detach_lane(self.outbox)


async def close_quietly(websocket: WebSocket, code: int, reason: str) -> None:
    """Refuse or close a socket without raising (it may already be gone)."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.close(code, reason)
