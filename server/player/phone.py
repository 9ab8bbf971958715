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
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from server.core.config import Settings
from server.player import phone_pairing
from server.player import protocol as p
from server.player._phase import PlayError
from server.player._store import SessionStore
from server.player.outbox import Outbox
from server.player.phone_pairing import PAIRING_TTL_S, issue_ticket
from server.player.views import uses_phone
from server.services.crowd import phone_codes
from server.study_spec import StudySpec

PHONE_SUBPROTOCOL = "rlds-studio-phone"
PHONE_KEYS = ("PhoneClutch", "PhoneGrip")
MAX_PHONE_MESSAGE_BYTES = 2048
CONFIRM_TIMEOUT_S = 60.0  # a second phone waits this long for the participant's answer


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

    def __init__(self, session_id: str, participant_id: int | None, study_name: str = "") -> None:
        self.session_id, self.participant_id, self.study_name = (
            session_id, participant_id, study_name)  # fmt: skip
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

    async def pairing(self, origin: str, settings: Settings, store: SessionStore,
                      spec: StudySpec) -> dict[str, Any]:  # fmt: skip
        """A new pairing for the panel (``phone_pairing``): a QR code of the phone page's
        address (under ``STUDIO_PUBLIC_URL`` when set, else the page's origin) and a code;
        ``loopback`` when that address is one no phone can reach."""
        if not any(uses_phone(env) for env in spec.environments):
            raise PlayError("no_phone", "this study's controls do not use a phone")
        replica = settings.replica_id  # the phone's socket must reach this replica
        if phone_pairing.page_url(origin, "", replica) is None:
            raise PlayError("invalid", "phone_pair: origin: give the page's location.origin")
        ticket, expires, ttl = self.pair(settings.secret_key, replica)
        # any replica redeems the code
        code = await store.call(phone_codes.add, self.session_id, replica, ticket, expires)
        url = phone_pairing.page_url(origin, ticket, replica, settings.public_url)
        assert url is not None
        return {"type": "phone_pairing", "code": code, "url": url, "replica": replica,
                "qr": phone_pairing.qr_svg(url), "expires_s": ttl,
                "loopback": phone_pairing.is_loopback(url)}  # fmt: skip

    def confirm(self, accept: bool) -> None:
        """The participant's answer: a second phone replaces the connected one, or not."""
        if self.pending is None or self.pending.done():
            raise PlayError("no_request", "no other phone is waiting to connect")
        self.pending.set_result(accept)

    async def await_turn(self, outbox: Outbox, nonce: str,
                         notify: Callable[[dict[str, Any]], None]) -> bool:  # fmt: skip
        """A phone with this pairing may attach: at once when no other is connected, else
        once the participant accepts it (``notify`` tells the page); False when refused."""
        if self.outbox is None or self.nonce == nonce:
            return True
        if self.pending is not None and not self.pending.done():
            self.pending.set_result(False)  # the newest phone asks
        self.pending = asyncio.get_running_loop().create_future()
        outbox.send({"type": "waiting_confirm",
                     "message": "Another phone is connected. Confirm on the computer to use "
                                "this one instead."})  # fmt: skip
        notify(self.status())
        try:
            accepted = await asyncio.wait_for(asyncio.shield(self.pending), CONFIRM_TIMEOUT_S)
        except TimeoutError:
            accepted = False
        self.pending = None
        notify(self.status())
        if not accepted:
            outbox.error("refused", "the participant kept the phone already connected")
            outbox.close(p.CLOSE_POLICY, "refused")
        return accepted

    def join(self, outbox: Outbox, nonce: str, phase: str,
             notify: Callable[[dict[str, Any]], None]) -> bool:  # fmt: skip
        """The phone's socket is the session's now (a previous phone is told and closed);
        False when the session (in ``phase``) has ended."""
        if phase == "closed":
            outbox.error("session_ended", "the study session has ended")
            outbox.close(p.CLOSE_ENDED, "session ended")
            return False
        if self.outbox is not None:
            self.outbox.error("replaced", "another phone is used now")
            self.outbox.close(p.CLOSE_REPLACED, "replaced by another phone")
        self.outbox, self.nonce = outbox, nonce
        self.set_input([], [])
        notify(self.status())
        outbox.send({"type": "phone_hello", "study": self.study_name, "phase": phase})
        return True

    def update(self, outbox: Outbox, axes: list[float], keys: list[str], lost: bool) -> bool:
        """The phone's new input (``lost``: it went away, its input zero, its pairing kept);
        False when ``outbox`` is not the connected phone's."""
        if self.outbox is not outbox:
            return False
        if lost:
            self.outbox = None
        self.set_input(axes, keys)
        return True

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
