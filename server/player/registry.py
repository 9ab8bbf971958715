"""The live play sessions of this process, keyed by play session id."""

from __future__ import annotations

import asyncio
import secrets

from server.player.session import LiveSession
from server.runtime.warm_pool import WarmPool


class Registry:
    """Sessions that are running or waiting for their player to reconnect, and the warm
    workers waiting for them (``warm``; None: none are kept)."""

    def __init__(self, warm: WarmPool | None = None) -> None:
        self.sessions: dict[str, LiveSession] = {}
        self.warm = warm

    def get(self, session_id: str | None) -> LiveSession | None:
        """The live session with this id, if any."""
        return self.sessions.get(session_id or "")

    def of_participant(self, participant_id: int) -> LiveSession | None:
        """The participant's live session, if any (a participant has at most one)."""
        for live in self.sessions.values():
            if live.principal.participant_id == participant_id:
                return live
        return None

    def by_lane_key(self, key: str) -> LiveSession | None:
        """The session whose page was given this lane key (with its hello), if any."""
        given = key.encode()  # (compare_digest takes only ASCII str; a URL may hold anything)
        for live in list(self.sessions.values()):
            if secrets.compare_digest(live.lane_key.encode(), given):
                return live
        return None

    def add(self, live: LiveSession) -> None:
        """Track a new session."""
        self.sessions[live.id] = live

    def remove(self, live: LiveSession) -> None:
        """Forget a closed session."""
        if self.sessions.get(live.id) is live:
            del self.sessions[live.id]

    def workers_in_use(self, study_id: int | None = None) -> int:
        """Environment workers currently running (of one study, when given).

        Also called from request threads (the background budget): it counts a snapshot, so
        the event loop adding a session meanwhile cannot break the count."""
        sessions = list(self.sessions.values())  # one C-level copy, atomic under the GIL
        return sum(1 for live in sessions if live.worker is not None
                   and (study_id is None or live.study_id == study_id))  # fmt: skip

    async def close_all(self) -> None:
        """Close every session (app shutdown): episodes abandoned, workers stopped."""
        await asyncio.gather(
            *(live.close("the server is shutting down") for live in list(self.sessions.values())),
            return_exceptions=True,
        )
