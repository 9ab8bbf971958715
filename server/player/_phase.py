"""A play session's phases and the errors a message that cannot be served gets."""

from __future__ import annotations

import enum
from typing import Any

from server.runtime import RemoteError


class Phase(enum.StrEnum):
    """Where a play session is in its state machine (see the module docstring)."""

    idle = "idle"
    starting = "starting"
    ready = "ready"  # the first frame is shown; nothing steps until the player's ``go``
    playing = "playing"
    paused = "paused"
    ended = "ended"
    closed = "closed"


ACTIVE = frozenset({Phase.ready, Phase.playing, Phase.paused})


class PlayError(Exception):
    """A message that cannot be served now; answered with an ``error`` message."""

    def __init__(self, code: str, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra or {}  # more fields of the error message (e.g. ``next``)


def refused(code: str, message: str, state: dict[str, Any] | None) -> PlayError:
    """A refused start: a participant's carries their ``state`` and its ``next``, the way
    forward (None: a designer test-playing, who gets the message alone)."""
    if state is None:
        return PlayError(code, message)
    return PlayError(code, message, {"next": state["next"], "participant": state})


def failure_text(exc: BaseException) -> tuple[str, str]:
    """What a worker's failure says: its kind and message (a remote exception's own), and
    the text the designer reads on the failed episode."""
    message = exc.message if isinstance(exc, RemoteError) else str(exc)
    kind = exc.kind if isinstance(exc, RemoteError) else type(exc).__name__
    return f"{kind}: {message}", f"The environment failed ({kind}: {message[:300]})"


def wrong_state(phase: Phase, what: str) -> PlayError:
    """The error for a message the current phase does not allow."""
    return PlayError("wrong_state", f"cannot {what} now (the session is {phase})")
