"""A phone as a controller: the pairing code exchanged for the phone's ticket, and the
phone's WebSocket (``server/player/phone_socket.py``; docs/security.md, "Pairing a phone").

The codes and the wrong guesses are in the database (server/services/crowd/phone_codes.py),
so any replica answers the code; the socket must reach the replica that runs the session,
which the answer names (docs/deploy.md, "Sticky sessions (HAProxy)")."""

from __future__ import annotations

import math

from fastapi import APIRouter, HTTPException, Request, WebSocket

from server.api.deps import SessionDep, SettingsDep
from server.player.phone_socket import serve_phone
from server.schemas.crowd import PhoneCodeIn, PhoneTicketOut
from server.services.crowd.phone_codes import GuessLimit, normalize_code, redeem
from server.services.live.replicas import is_alive

router = APIRouter(tags=["player"])
GUESSES = GuessLimit()  # its counts are the database's: every replica shares them


@router.post(
    "/api/phone/pair",
    response_model=PhoneTicketOut,
    summary="Pair a phone with a code",
    responses={
        404: {"description": "No such code: wrong, expired, already used, or its session "
                             "ended (one message for all)."},
        422: {"description": "Not a code: six letters and digits from the code alphabet."},
        429: {"description": "Too many wrong codes from this address (or from everyone, "
                             "counted over every replica); the Retry-After header gives the "
                             "seconds to wait."},
    },
)  # fmt: skip
def pair(body: PhoneCodeIn, request: Request, db: SessionDep,
         settings: SettingsDep) -> PhoneTicketOut:  # fmt: skip
    """Exchange the code the player page shows (once, within ten minutes) for the phone's
    ticket and the replica that runs the session. Any replica answers: the codes are in the
    database, and of two phones sending one code at once exactly one gets the ticket. Wrong
    codes are limited per client address and over all addresses, across replicas."""
    address = request.client.host if request.client else ""
    wait = GUESSES.retry_after(db, address)
    if wait:
        minutes = math.ceil(wait / 60)
        raise HTTPException(429, detail=f"Too many wrong codes. Try again in {minutes} "
                            f"minute{'s' if minutes > 1 else ''}.",
                            headers={"Retry-After": str(wait)})  # fmt: skip
    code = normalize_code(body.code)
    found = redeem(db, code) if code is not None else None
    if found is None:
        live = False
    elif found.replica_id == settings.replica_id:
        live = request.app.state.player_registry.get(found.session_id) is not None
    else:  # another replica's session: live while that replica heartbeats
        live = is_alive(db, found.replica_id, settings.replica_dead_after_s)
    if found is None or not live:
        GUESSES.failed(db, address)
        if code is None:
            raise HTTPException(422, detail="A code is 6 letters and digits, as shown on the "
                                "computer (no 0, O, 1, I or L).")  # fmt: skip
        raise HTTPException(404, detail="This code is not valid: it may be mistyped, expired "
                            "or already used. Show a new code on the computer.")  # fmt: skip
    return PhoneTicketOut(ticket=found.ticket, replica=found.replica_id)


@router.websocket("/ws/phone")
async def phone_socket(websocket: WebSocket) -> None:
    """The phone's socket: the ticket in the ``Sec-WebSocket-Protocol`` header (as
    ``ticket.<ticket>``, beside ``rlds-studio-phone``); ``phone_input`` messages in. Open it
    as ``/ws/phone?replica=<replica>`` (from the pairing) so that the load balancer routes it
    to the replica that runs the session; another replica answers ``wrong_server`` and closes
    with 1008."""
    app = websocket.app
    settings = app.state.settings
    await serve_phone(websocket, app.state.player_registry, settings.secret_key,
                      settings.replica_id)  # fmt: skip
