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
from server.player.connection import Connection, LaneConnection, close_quietly
from server.player.protocol import PROTOCOL_VERSION
from server.player.registry import Registry
from server.player.session import LiveSession
from server.player.views import study_view
from server.principal import Principal
from server.schemas.crowd import PlayerStudyOut
from server.services import users
from server.services.crowd import episodes, leases
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


def _offered_ticket(websocket: WebSocket) -> str | None:
    """The ticket offered as a ``ticket.<ticket>`` subprotocol, if any."""
    for offered in websocket.scope.get("subprotocols") or ():
        if offered.startswith(p.TICKET_PREFIX):
            return str(offered[len(p.TICKET_PREFIX) :])
    return None


def _authenticate(
    db: Session, websocket: WebSocket, secret_key: str
) -> tuple[Principal, Study] | str:
    """The player and study of a new socket, or why it is refused."""
    if "ticket" in websocket.query_params:
        # URLs end up in access logs and browser history; the ticket goes in the header
        return "send the play ticket in the Sec-WebSocket-Protocol header, not the URL"
    ticket_text = _offered_ticket(websocket)
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
    registry: Registry = app.state.player_registry
    wanted = websocket.query_params.get("session")
    live = registry.get(wanted)
    unknown = bool(wanted) and live is None  # ended, expired, or never ours: a fresh one
    if live is not None and (live.study_id != study.id or not live.owned_by(principal)):
        await close_quietly(websocket, p.CLOSE_POLICY, "this play session is not yours")
        return
    offered = websocket.scope.get("subprotocols") or ()
    takeover = p.TAKEOVER in offered or websocket.query_params.get("takeover") == "1"
    participant_id = principal.participant_id

    def lease(session_id: str) -> bool:
        # one live session per participant across every replica (server/services/crowd/leases.py)
        if participant_id is None:
            return True
        with sessionmaker() as db:
            return leases.take(db, participant_id, session_id, settings.replica_id,
                               settings.replica_dead_after_s, takeover=takeover,
                               replaces=wanted)  # fmt: skip

    if live is None and participant_id is not None:
        # one live session per participant: a socket without it is another tab
        live = registry.of_participant(participant_id)
        if live is not None and live.outbox is not None and not takeover:
            await _refuse_open_elsewhere(websocket, offered)
            return
        if live is not None and unknown and not takeover:
            # a page asking for a session we do not have is not resuming this leftover (its
            # episode is kept as abandoned): it gets a fresh session, and is told so
            await live.close("replaced by a new session")
            live = None
    if live is not None and not await asyncio.to_thread(lease, live.id):
        # its lease went to a tab on another replica meanwhile (this one ends at our next tick)
        await _refuse_open_elsewhere(websocket, offered)
        return
    resumed = live is not None
    if live is None:

        def start() -> str:
            with sessionmaker() as db:
                return episodes.start_session(db, study.id, principal)

        live = LiveSession(
            session_id=await asyncio.to_thread(start), study_id=study.id,
            spec=studies.spec_of(study), principal=principal, settings=settings,
            db=sessionmaker, on_closed=registry.remove,
            workers_in_use=registry.workers_in_use,
        )  # fmt: skip
        if (participant_id is not None and registry.of_participant(participant_id)) or not (
            await asyncio.to_thread(lease, live.id)
        ):  # another tab (here or on another replica) won the race while the row was written
            await _refuse_open_elsewhere(websocket, offered)
            await live.close("opened elsewhere")
            return
        registry.add(live)
    # A browser that offered subprotocols fails the socket unless the server picks one.
    await websocket.accept(subprotocol=p.SUBPROTOCOL if p.SUBPROTOCOL in offered else None)
    await Connection(websocket, live).serve(resumed, session_not_found=unknown)


async def _serve_lane(websocket: WebSocket, key: str) -> None:
    """A lane of a live session of this replica (docs/protocol.md, "Lanes")."""
    registry: Registry = websocket.app.state.player_registry
    live = registry.by_lane_key(key[:64])
    if live is None:
        await close_quietly(websocket, p.CLOSE_POLICY, "no play session here has this lane key")
        return
    offered = websocket.scope.get("subprotocols") or ()
    await websocket.accept(subprotocol=p.SUBPROTOCOL if p.SUBPROTOCOL in offered else None)
    if not await LaneConnection(websocket, live).serve_lane():
        await close_quietly(websocket, p.CLOSE_POLICY, "this play session has all its lanes")


async def _refuse_open_elsewhere(websocket: WebSocket, offered: Any) -> None:
    """Another tab plays this participant's session: say so (the page offers to take over,
    reconnecting with the ``takeover`` subprotocol) and close with 4002."""
    await websocket.accept(subprotocol=p.SUBPROTOCOL if p.SUBPROTOCOL in offered else None)
    message = {"type": "error", "code": "open_elsewhere",
               "message": "This study is open in another tab or window."}  # fmt: skip
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.send_text(json.dumps(message))
    await close_quietly(websocket, p.CLOSE_OPEN_ELSEWHERE, "open elsewhere")
