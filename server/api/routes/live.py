"""The live study dashboard: its figures now, and a WebSocket that pushes them every tick.

Only designers who manage the study (its owner, or an admin) see it. The figures come from
the database (server/services/live/dashboard.py), so every replica shows the same ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.api.routes.play import same_origin
from server.core import security
from server.errors import NotFound
from server.models import MAX_DB_INT, Study
from server.player import protocol as p
from server.player.connection import close_quietly
from server.principal import Principal
from server.services import users
from server.services.live import dashboard
from server.services.live.live_feed import LiveFeed
from server.services.studies import studies

router = APIRouter(tags=["live"])
REAUTH_S = 30.0  # how often an open dashboard socket checks its viewer may still see it


@router.get("/api/studies/{study_id}/live", summary="A study's live dashboard now",
            responses={404: {"description": "No such study, or not yours."}})  # fmt: skip
def live_now(
    study_id: RowId, db: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> dict[str, Any]:
    """Active sessions on every live replica (participant, environment, phase, episode,
    step, fps, input latency p50 over the last 120 inputs, dropped frames), quota progress
    per environment, episodes per status started today (UTC) and participants joined,
    started and completed; a feedback study's ``feedback`` (judgements per minute over the
    last ten minutes, agreement so far, progress to the quota, active judges; null in a play
    study). ``/ws/studies/{id}/live`` pushes the same object every tick."""
    study = studies.get_study(db, principal, study_id)
    data = dashboard.snapshot(db, study.id, settings.replica_dead_after_s)
    if data is None:
        raise NotFound("No such study.")
    return data


def _may_watch(websocket: WebSocket, study_id: int) -> str | None:
    """Why this socket may not watch the study (None: it may)."""
    with websocket.app.state.sessionmaker() as db:
        user = users.user_for_token(db, websocket.cookies.get(security.SESSION_COOKIE))
        if user is None:
            return "log in first"
        study = db.get(Study, study_id)
        if study is None or not Principal.for_user(user.id, user.role).can_manage(study):
            return "no such study, or not yours"
    return None


@router.websocket("/ws/studies/{study_id}/live")
async def live_socket(websocket: WebSocket, study_id: int) -> None:
    """Pushes ``{"type": "live", ...}`` (the object of ``GET /api/studies/{id}/live``) every
    tick; the client sends nothing (any message closes the socket with 1008)."""
    if not same_origin(websocket):
        await close_quietly(websocket, p.CLOSE_POLICY, "cross-origin socket refused")
        return
    refused = (
        "no such study, or not yours"
        if not 1 <= study_id <= MAX_DB_INT
        else await asyncio.to_thread(_may_watch, websocket, study_id)
    )
    await websocket.accept()
    if refused is not None:
        await _close(websocket, refused)
        return
    feed: LiveFeed = websocket.app.state.live_feed
    async with feed.watch(study_id) as queue:
        sender = asyncio.create_task(_send(websocket, study_id, queue))
        receiver = asyncio.create_task(websocket.receive())
        try:
            done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if receiver in done and not receiver.cancelled() and receiver.exception() is None:
                if receiver.result()["type"] != "websocket.disconnect":
                    await _close(websocket, "this socket takes no messages")
        finally:
            for task in (sender, receiver):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _send(websocket: WebSocket, study_id: int, queue: asyncio.Queue[str | None]) -> None:
    checked = time.monotonic()
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        while True:
            text = await queue.get()
            if text is None:
                await _close(websocket, "the study was deleted")
                return
            if time.monotonic() - checked > REAUTH_S:
                checked = time.monotonic()
                refused = await asyncio.to_thread(_may_watch, websocket, study_id)
                if refused is not None:
                    await _close(websocket, refused)
                    return
            await websocket.send_text(text)


async def _close(websocket: WebSocket, reason: str) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.send_text(json.dumps({"type": "error", "message": reason}))
    await close_quietly(websocket, p.CLOSE_POLICY, reason)
