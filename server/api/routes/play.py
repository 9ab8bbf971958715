"""The player: participant entry, the page's study view, and the play WebSocket.

Designers test-play any study they manage with their session cookie; participants come
through the study's permalink, give their participant id and get a signed play ticket
that the WebSocket presents in its ``Sec-WebSocket-Protocol`` header, never in the URL
(``docs/protocol.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from sqlalchemy.orm import Session

from server.api.deps import CurrentPrincipal, RowId, SessionDep
from server.core import security
from server.models import Study, StudyState, is_row_id
from server.player import protocol as p
from server.player import tickets
from server.player.admission import Entry, Refusal, admit
from server.player.connection import Connection, LaneConnection, close_quietly
from server.player.protocol import PROTOCOL_VERSION
from server.player.registry import Registry
from server.player.views import study_view
from server.principal import Principal
from server.schemas.crowd import PlayerStudyOut
from server.services import users
from server.services.crowd import episodes
from server.services.studies import studies

router = APIRouter(tags=["player"])


@router.get(
    "/api/play/studies/{study_id}", response_model=PlayerStudyOut, summary="A study to test-play"
)
def test_play(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> PlayerStudyOut:
    """The player's view of a study you manage (any state: test-play)."""
    study = studies.get_study(db, principal, study_id)
    counts = episodes.completed_counts(db, study.id, principal)
    return PlayerStudyOut(
        study=study_view(study.id, studies.spec_of(study), counts), protocol=PROTOCOL_VERSION
    )


def same_origin(websocket: WebSocket) -> bool:
    """Cookie-authenticated sockets must come from our own pages (no cross-site hijack)."""
    origin = websocket.headers.get("origin")
    if origin is None:
        return True  # not a browser
    return urlsplit(origin).netloc == websocket.headers.get("host")


def _authenticate(
    db: Session, websocket: WebSocket, secret_key: str
) -> tuple[Principal, Study] | str:
    """The player and study of a new socket, or why it is refused."""
    if "ticket" in websocket.query_params:
        # URLs end up in access logs and browser history; the ticket goes in the header
        return "send the play ticket in the Sec-WebSocket-Protocol header, not the URL"
    ticket_text = p.offered_ticket(websocket.scope.get("subprotocols") or ())
    if ticket_text is not None:
        held = tickets.holder(db, secret_key, ticket_text)
        if held is None:
            return "invalid, expired or revoked play ticket"
        study, participant = held
        if study.state != StudyState.active and not participant.is_test:  # a preview plays any
            return "the study is not accepting participants"
        return Principal.for_participant(study.id, participant.id, participant.is_test), study
    user = users.user_for_token(db, websocket.cookies.get(security.SESSION_COOKIE))
    if user is None:
        return "log in or join the study first"
    if not same_origin(websocket):
        return "cross-origin socket refused"
    study_id = websocket.query_params.get("study", "")
    played = db.get(Study, int(study_id)) if is_row_id(study_id) else None
    principal = Principal.for_user(user.id, user.role)
    if played is None or not principal.can_play(played):
        return "no such study, or not yours"
    return principal, played


@router.websocket("/ws/play")
async def play_socket(websocket: WebSocket) -> None:
    """The player's socket: a ticket in the ``Sec-WebSocket-Protocol`` header (participant)
    or ``?study=`` (designer cookie), plus ``session=<id>`` to resume a session after a
    reload or a dropped connection. ``?lane=<key>``: one more socket of a page whose
    ``hello`` offered lanes (the key is its credential)."""
    app = websocket.app
    lane_key = websocket.query_params.get("lane")
    if lane_key is not None:
        await _serve_lane(websocket, lane_key)
        return
    settings = app.state.settings
    sessionmaker = app.state.sessionmaker

    def auth() -> tuple[Principal, Study] | str:
        with sessionmaker() as db:
            return _authenticate(db, websocket, settings.secret_key)

    found = await asyncio.to_thread(auth)
    if isinstance(found, str):
        await close_quietly(websocket, p.CLOSE_POLICY, found)
        return
    principal, study = found
    offered = websocket.scope.get("subprotocols") or ()
    takeover = p.TAKEOVER in offered or websocket.query_params.get("takeover") == "1"
    entry = Entry(principal, study, websocket.query_params.get("session"), takeover)

    async def refuse(why: Refusal) -> None:
        if why == "not_yours":
            await close_quietly(websocket, p.CLOSE_POLICY, "this play session is not yours")
        else:
            await _refuse_open_elsewhere(websocket, offered)

    admitted = await admit(app.state.player_registry, settings, sessionmaker, entry, refuse)
    if admitted is None:
        return
    await websocket.accept(subprotocol=p.chosen_subprotocol(offered))
    await Connection(websocket, admitted.live).serve(
        admitted.resumed, session_not_found=admitted.session_not_found
    )


async def _serve_lane(websocket: WebSocket, key: str) -> None:
    """A lane of a live session of this replica (docs/protocol.md, "Lanes")."""
    registry: Registry = websocket.app.state.player_registry
    live = registry.by_lane_key(key[:64])
    if live is None:
        await close_quietly(websocket, p.CLOSE_POLICY, "no play session here has this lane key")
        return
    await websocket.accept(
        subprotocol=p.chosen_subprotocol(websocket.scope.get("subprotocols") or ())
    )
    if not await LaneConnection(websocket, live).serve_lane():
        await close_quietly(websocket, p.CLOSE_POLICY, "this play session has all its lanes")


async def _refuse_open_elsewhere(websocket: WebSocket, offered: Any) -> None:
    """Another tab plays this participant's session: say so (the page offers to take over,
    reconnecting with the ``takeover`` subprotocol) and close with 4002."""
    await websocket.accept(subprotocol=p.chosen_subprotocol(offered))
    message = {"type": "error", "code": "open_elsewhere",
               "message": "This study is open in another tab or window."}  # fmt: skip
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.send_text(json.dumps(message))
    await close_quietly(websocket, p.CLOSE_OPEN_ELSEWHERE, "open elsewhere")
