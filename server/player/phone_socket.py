"""The phone's WebSocket: who may connect, a second phone's wait for the participant's
yes, then its input merged into the session until it goes away (its input then zero).

Close codes: 1008 refused (ticket, pairing, flood, a session another replica runs), 4000
another phone replaced this one, 4001 the session ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.websockets import WebSocket, WebSocketDisconnect

from server.player import protocol as p
from server.player.outbox import Close, Outbox, RateLimiter
from server.player.phone import PHONE_SUBPROTOCOL, PhoneInputMsg, parse_phone
from server.player.phone_pairing import PhoneTicket, read_ticket
from server.player.registry import Registry
from server.player.session import LiveSession, Phase
from server.recording.format import now_ms

log = logging.getLogger(__name__)

PHONE_RATE = 40.0  # messages per second (the page sends 20)
MAX_BAD = 20


def _find(
    registry: Registry, ticket: PhoneTicket | None, replica: str
) -> LiveSession | tuple[str, str]:
    if ticket is None:
        return "invalid_ticket", "this pairing link is not valid; scan the code again"
    if ticket.replica != replica:  # the load balancer did not route on ?replica= (or it died)
        return "wrong_server", (
            f"this phone reached server {replica}, but its study session runs on server "
            f"{ticket.replica}: the load balancer must send /ws/phone?replica={ticket.replica} "
            "there (docs/deploy.md); if that server stopped, pair again from the computer"
        )
    live = registry.get(ticket.session_id)
    if live is None or live.phase == Phase.closed:
        return "session_ended", (
            "the study session this phone was paired with has ended; pair again from the computer"
        )
    refusal = live.phone.refusal(ticket.nonce, ticket.participant_id)
    return live if refusal is None else refusal


async def serve_phone(websocket: WebSocket, registry: Registry, secret_key: str,
                      replica: str) -> None:  # fmt: skip
    """Serve one phone socket until it or its session goes away (``replica``: this one)."""
    offered = websocket.scope.get("subprotocols") or ()
    await websocket.accept(subprotocol=PHONE_SUBPROTOCOL if PHONE_SUBPROTOCOL in offered else None)
    ticket = read_ticket(secret_key, p.offered_ticket(offered))
    found = _find(registry, ticket, replica)
    outbox = Outbox()
    sender = asyncio.create_task(_send_all(websocket, outbox), name="phone-sender")
    try:
        if isinstance(found, tuple):
            outbox.error(*found)
            outbox.close(p.CLOSE_POLICY, found[0])
            return
        assert ticket is not None
        live = found
        if not await live.phone_attach(outbox, ticket.nonce):
            return
        await _serve(websocket, live, outbox)
    finally:
        outbox.close(1000, "bye")  # a no-op after a close queued above
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(sender, 2.0)


async def _serve(websocket: WebSocket, live: LiveSession, outbox: Outbox) -> None:
    rate = RateLimiter(PHONE_RATE, PHONE_RATE)
    bad = 0
    try:
        while not outbox.closing:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if not rate.allow():
                continue  # over the rate: dropped (the next one carries the same state)
            try:
                msg = parse_phone(message.get("text") or "")
            except p.BadMessage as exc:
                bad += 1
                outbox.error(exc.code, exc.message)
                if bad > MAX_BAD or exc.code == "too_large":
                    outbox.close(p.CLOSE_POLICY, "too many invalid messages")
                continue
            if isinstance(msg, PhoneInputMsg):
                await asyncio.shield(live.phone_input(outbox, msg.axes, list(msg.keys)))
            else:
                outbox.send({"type": "pong", "server_ms": now_ms()})
    except (WebSocketDisconnect, RuntimeError, OSError):
        return
    finally:
        await asyncio.shield(live.phone_input(outbox, [], [], lost=True))


async def _send_all(websocket: WebSocket, outbox: Outbox) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        while True:
            item = await outbox.get()
            if isinstance(item, Close):
                await websocket.close(item.code, item.reason)
                return
            if isinstance(item, str):
                await websocket.send_text(item)
