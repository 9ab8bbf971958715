"""Which live session a new play socket joins: the one it resumes, one it takes over, or a
fresh one; a participant has one live session across every replica (the lease,
:mod:`server.services.crowd.leases`).

:func:`admit` decides; the route only authenticates the socket, accepts or refuses it and
serves the session it is given (docs/protocol.md, "Resuming" and "One session per
participant").
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy.orm import Session, sessionmaker

from server.core.config import Settings
from server.models import Study
from server.player.env_link import prewarm
from server.player.registry import Registry
from server.player.session import LiveSession, SessionContext
from server.principal import Principal
from server.services.crowd import episodes, leases
from server.services.studies import studies

# why a socket is refused: the session it asks for is someone else's, or this participant's
# session is open in another tab (here or on another replica)
Refusal = Literal["not_yours", "open_elsewhere"]


def _same_player(mine: Principal, theirs: Principal) -> bool:
    """True when ``theirs`` is the player ``mine`` is (the same participant, or user)."""
    if mine.participant_id is not None:
        return theirs.participant_id == mine.participant_id
    return theirs.user_id is not None and theirs.user_id == mine.user_id


@dataclass(frozen=True)
class Admitted:
    """The session a socket serves, and what its ``hello`` says of it."""

    live: LiveSession
    resumed: bool
    session_not_found: bool  # the ``session=`` asked for is not here: this one is new


@dataclass(frozen=True)
class Entry:
    """A new play socket: who plays which study, the session it asks to resume, and whether
    it takes over the participant's session from another tab."""

    principal: Principal
    study: Study
    wanted: str | None
    takeover: bool


async def admit(registry: Registry, settings: Settings, db: sessionmaker[Session],
                entry: Entry, refuse: Callable[[Refusal], Awaitable[None]],
                ) -> Admitted | None:  # fmt: skip
    """The session ``entry``'s socket serves, or None once ``refuse`` has answered it."""
    participant_id = entry.principal.participant_id
    live = registry.get(entry.wanted)
    unknown = bool(entry.wanted) and live is None  # ended, expired, or never ours: fresh
    if live is not None and (
        live.study_id != entry.study.id or not _same_player(live.principal, entry.principal)
    ):
        await refuse("not_yours")
        return None

    def lease(session_id: str) -> bool:
        if participant_id is None:
            return True
        with db() as session:
            return leases.take(session, participant_id, session_id, settings.replica_id,
                               settings.replica_dead_after_s, takeover=entry.takeover,
                               replaces=entry.wanted)  # fmt: skip

    if live is None and participant_id is not None:
        # one live session per participant: a socket without it is another tab
        live = registry.of_participant(participant_id)
        if live is not None and live.outbox is not None and not entry.takeover:
            await refuse("open_elsewhere")
            return None
        if live is not None and unknown and not entry.takeover:
            # a page asking for a session we do not have is not resuming this leftover (its
            # episode is kept as abandoned): it gets a fresh session, and is told so
            await live.close("replaced by a new session")
            live = None
    if live is not None and not await asyncio.to_thread(lease, live.id):
        # its lease went to a tab on another replica meanwhile (this one ends at our next tick)
        await refuse("open_elsewhere")
        return None
    if live is not None:
        return Admitted(live, resumed=True, session_not_found=unknown)

    def start() -> str:
        with db() as session:
            return episodes.start_session(session, entry.study.id, entry.principal)

    context = SessionContext(
        study_id=entry.study.id, spec=studies.spec_of(entry.study), principal=entry.principal,
        settings=settings, db=db, on_closed=registry.remove,
        workers_in_use=registry.workers_in_use, warm=registry.warm,
    )  # fmt: skip
    live = LiveSession(await asyncio.to_thread(start), context)
    if (participant_id is not None and registry.of_participant(participant_id)) or not (
        await asyncio.to_thread(lease, live.id)
    ):  # another tab (here or on another replica) won the race while the row was written
        await refuse("open_elsewhere")
        await live.close("opened elsewhere")
        return None
    registry.add(live)
    await prewarm(registry.warm, context.spec, settings, context.study_id)
    return Admitted(live, resumed=False, session_not_found=unknown)
