"""A play session's phone: its pairings, the paired phone's connection and its input.

The phone sends ``phone_input`` messages (its axes, ``PhoneClutch`` / ``PhoneGrip`` while
held); :meth:`PhoneLink.merged` adds them to the player page's latest input as
``devices.phone`` and keys, which is what the environment's next tick maps to an action.
A lost phone's input is zero; the episode goes on.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from server.player import protocol as p
from server.player.outbox import Outbox
from server.player.phone_pairing import PAIRING_TTL_S, issue_ticket

PHONE_SUBPROTOCOL = "rlds-studio-phone"
PHONE_KEYS = ("PhoneClutch", "PhoneGrip")
MAX_PHONE_MESSAGE_BYTES = 2048


class PhoneInputMsg(p._Msg):
    """The phone's axes (0 tilt forward, 1 tilt right, 2 twist left; from a WebXR pose also
    3 moved right, 4 moved away, 5 moved up), each finite in [-1, 1], and held buttons."""

    type: Literal["phone_input"]
    axes: list[p.AxisValue] = Field(default_factory=list, max_length=8)
    keys: list[Literal["PhoneClutch", "PhoneGrip"]] = Field(default_factory=list, max_length=2)
    client_ms: p.ClientMs | None = None


class PhonePingMsg(p._Msg):
    """Round trip check; answered with ``pong``."""

    type: Literal["ping"]


_PhoneMessage = Annotated[PhoneInputMsg | PhonePingMsg, Field(discriminator="type")]


def parse_phone(text: str) -> PhoneInputMsg | PhonePingMsg:
    """One phone message as its model, or :class:`server.player.protocol.BadMessage`."""
    if len(text.encode()) > MAX_PHONE_MESSAGE_BYTES:
        raise p.BadMessage("too_large", f"messages are limited to {MAX_PHONE_MESSAGE_BYTES} bytes")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise p.BadMessage("bad_json", "the message is not valid JSON") from None
    if not isinstance(data, dict) or data.get("type") not in ("phone_input", "ping"):
        raise p.BadMessage("unknown_type", "send phone_input or ping messages")
    try:
        if data["type"] == "ping":
            return PhonePingMsg.model_validate(data)
        return PhoneInputMsg.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or data["type"]
        raise p.BadMessage("invalid", f"{data['type']}: {where}: {first['msg']}") from None


class PhoneLink:
    """One session's phone: pairings issued, the connected phone, its latest input."""

    def __init__(self, session_id: str, participant_id: int | None) -> None:
        self.session_id = session_id
        self.participant_id = participant_id
        self.nonces: dict[str, float] = {}  # pairings issued → when they expire
        self.outbox: Outbox | None = None  # the connected phone's
        self.nonce: str | None = None  # the pairing of the connected (or last) phone
        self.pending: asyncio.Future[bool] | None = None  # a second phone waiting
        self.axes: list[float] = []
        self.keys: list[str] = []

    def pair(self, secret_key: str, replica: str) -> tuple[str, float, float]:
        """A new pairing on this session's ``replica``: its ticket, when it expires (seconds
        since the epoch) and its lifetime in seconds; its code is the database's
        (:func:`server.services.crowd.phone_codes.add`)."""
        now = time.time()
        self.nonces = {n: t for n, t in self.nonces.items() if t > now or n == self.nonce}
        nonce = secrets.token_hex(8)
        expires = now + PAIRING_TTL_S
        self.nonces[nonce] = expires
        ticket = issue_ticket(secret_key, self.session_id, self.participant_id, nonce, expires,
                              replica)  # fmt: skip
        return ticket, expires, PAIRING_TTL_S

    def refusal(self, nonce: str, participant_id: int | None) -> tuple[str, str] | None:
        """Why a phone with this pairing may not connect now (None: it may). The phone
        that was paired may come back as long as the session lasts; a new one within the
        pairing's lifetime."""
        if participant_id != self.participant_id:
            return "not_yours", "this pairing is not for this session"
        if nonce == self.nonce:
            return None
        expires = self.nonces.get(nonce)
        if expires is None:
            return "revoked", "this pairing was replaced; pair again from the computer"
        if expires < time.time():
            return "expired", "this pairing expired; show a new code on the computer"
        return None

    def status(self) -> dict[str, Any]:
        """The ``phone`` message the player page shows."""
        state = "connected" if self.outbox is not None else "lost" if self.nonce else "none"
        return {"type": "phone", "state": state, "request": self.pending is not None}

    def set_input(self, axes: list[float], keys: list[str]) -> None:
        """The phone's latest axes and held buttons (zeros when it is lost)."""
        self.axes = list(axes)
        self.keys = [k for k in PHONE_KEYS if k in keys]

    def merged(self, raw: dict[str, Any]) -> dict[str, Any]:
        """``raw`` (the player page's input) with the phone's added."""
        if not self.axes and not self.keys:
            return raw
        devices = dict(raw.get("devices") or {})
        devices["phone"] = self.axes
        keys = [k for k in raw.get("keys", []) if k not in PHONE_KEYS][: 32 - len(self.keys)]
        return {**raw, "keys": keys + self.keys, "devices": devices}

    def end(self, reason: str) -> None:
        """The session ended: every pairing is revoked, the phone is told and closed (the
        session drops its codes from the database)."""
        self.nonces.clear()
        self.nonce = None
        if self.pending is not None and not self.pending.done():
            self.pending.set_result(False)
        if self.outbox is not None:
            self.outbox.send({"type": "session_ended", "reason": reason})
            self.outbox.close(p.CLOSE_ENDED, reason)
            self.outbox = None
