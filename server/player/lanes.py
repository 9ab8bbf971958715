"""A play session's sockets: the page's play socket and its lanes (``settings.stream_lanes``,
docs/protocol.md "Lanes"), which carry frames in turn and a copy of each input."""

from __future__ import annotations

import secrets
from typing import Any

from server.player import protocol as p
from server.player.outbox import Outbox, next_turn


class PageSockets:
    """Where a session's messages go: control messages to the play socket, frames to it and
    its lanes in turn; which copy of an input counts (the first)."""

    def __init__(self, lanes_wanted: int) -> None:
        self.lanes_wanted = lanes_wanted
        self.outbox: Outbox | None = None  # the page's play socket, while connected
        self.key = secrets.token_urlsafe(18)  # the lanes' credential, given with hello
        self.lanes: list[Outbox] = []
        self.turn = 0  # whose turn the next frame is, among frame_outboxes()
        self.last_input_seq = 0  # inputs come once per socket they were sent on

    def take(self, outbox: Outbox | None) -> None:
        """``outbox`` is the page's play socket now (None: it went away); a previous one is
        closed, and the page's lanes go with it (a new key for the next ones)."""
        if outbox is not None and self.outbox is not None and self.outbox is not outbox:
            self.outbox.close(p.CLOSE_REPLACED, "the session was opened elsewhere")
        self.outbox = outbox
        self.close_lanes()
        if outbox is not None:
            self.last_input_seq = 0

    def offer(self) -> dict[str, Any]:
        """The ``lanes`` field of ``hello`` (none when no lanes are wanted)."""
        count = self.lanes_wanted
        return {"lanes": {"key": self.key, "count": count}} if count else {}

    def attach_lane(self, outbox: Outbox) -> bool:
        """One more socket of the page carries frames in turn; False when none is wanted."""
        if self.outbox is None or len(self.lanes) >= self.lanes_wanted:
            return False
        self.lanes.append(outbox)
        return True

    def detach_lane(self, outbox: Outbox) -> None:
        """A lane went away."""
        if outbox in self.lanes:
            self.lanes.remove(outbox)

    def close_lanes(self) -> None:
        """The page's lanes go with its play socket: closed, and a new key for the next."""
        for lane in self.lanes:
            lane.close(p.CLOSE_NORMAL, "the page's play socket closed")
        self.lanes = []
        self.key = secrets.token_urlsafe(18)

    def frame_outboxes(self) -> list[Outbox]:
        """The page's sockets that carry frames: its play socket, then its lanes."""
        return [] if self.outbox is None else [self.outbox, *self.lanes]

    def next_frame_outbox(self) -> Outbox | None:
        """The socket for the next frame: they take turns (:func:`outbox.next_turn`)."""
        boxes = self.frame_outboxes()
        if not boxes:
            return None
        turn = next_turn(boxes, self.turn)
        self.turn = turn + 1
        return boxes[turn]

    def fresh_input(self, seq: int | None) -> bool:
        """False for an input already received (the page sends each one on all its sockets)."""
        if seq is None:
            return True
        if seq <= self.last_input_seq:
            return False
        self.last_input_seq = seq
        return True

    def end(self, reason: str) -> None:
        """The session ended: the page is told and its sockets closed."""
        self.close_lanes()
        if self.outbox is not None:
            self.outbox.send({"type": "session_ended", "reason": reason})
            self.outbox.close(p.CLOSE_ENDED, reason)

    def send(self, message: dict[str, Any]) -> None:
        """A control message to the page, if connected."""
        if self.outbox is not None:
            self.outbox.send(message)
