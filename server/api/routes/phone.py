"""A phone as a controller: the pairing code exchanged for the phone's ticket, and the
phone's WebSocket (``server/player/phone_socket.py``; docs/security.md, "Pairing a phone")."""

from __future__ import annotations

import math

from fastapi import APIRouter, HTTPException, Request, WebSocket

from server.player.phone import CODES
from server.player.phone_pairing import GuessLimit, normalize_code
from server.player.phone_socket import serve_phone
from server.schemas import PhoneCodeIn, PhoneTicketOut

router = APIRouter(tags=["player"])


def _guesses(request: Request) -> GuessLimit:
    state = request.app.state
    if getattr(state, "phone_guesses", None) is None:
        state.phone_guesses = GuessLimit()
    limit: GuessLimit = state.phone_guesses
    return limit


@router.post(
    "/api/phone/pair",
    response_model=PhoneTicketOut,
    summary="Pair a phone with a code",
    responses={
        404: {"description": "No such code: wrong, expired, already used, or its session "
                             "ended (one message for all)."},
        422: {"description": "Not a code: six letters and digits from the code alphabet."},
        429: {"description": "Too many wrong codes from this address (or from everyone); "
                             "the Retry-After header gives the seconds to wait."},
    },
)  # fmt: skip
def pair(body: PhoneCodeIn, request: Request) -> PhoneTicketOut:
    """Exchange the code the player page shows (once, within ten minutes) for the phone's
    ticket. Wrong codes are limited per client address and over all addresses."""
    limit = _guesses(request)
    address = request.client.host if request.client else ""
    wait = limit.retry_after(address)
    if wait:
        minutes = math.ceil(wait / 60)
        raise HTTPException(429, detail=f"Too many wrong codes. Try again in {minutes} "
                            f"minute{'s' if minutes > 1 else ''}.",
                            headers={"Retry-After": str(wait)})  # fmt: skip
    code = normalize_code(body.code)
    pairing = CODES.redeem(code) if code is not None else None
    sessions = request.app.state.player_registry
    if pairing is None or sessions.get(pairing.session_id) is None:
        limit.failed(address)
        if code is None:
            raise HTTPException(422, detail="A code is 6 letters and digits, as shown on the "
                                "computer (no 0, O, 1, I or L).")  # fmt: skip
        raise HTTPException(404, detail="This code is not valid: it may be mistyped, expired "
                            "or already used. Show a new code on the computer.")  # fmt: skip
    return PhoneTicketOut(ticket=pairing.ticket)


@router.websocket("/ws/phone")
async def phone_socket(websocket: WebSocket) -> None:
    """The phone's socket: the ticket in the ``Sec-WebSocket-Protocol`` header (as
    ``ticket.<ticket>``, beside ``rlds-studio-phone``); ``phone_input`` messages in."""
    app = websocket.app
    await serve_phone(websocket, app.state.player_registry, app.state.settings.secret_key)
