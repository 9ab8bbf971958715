"""Pairing a phone with a play session: the short code, the phone's signed ticket, the
limit on code guesses, and the QR code of the phone page's address.

The player page asks its session for a pairing (``phone_pair``); the session keeps its
nonce for :data:`PAIRING_TTL_S` seconds and shows a QR code of ``/phone.html#ticket=<ticket>``
and a six-character code. The code is looked up here (:class:`CodeBook`) and, once, exchanged
for the same ticket (``POST /api/phone/pair``). A ticket is
``phone.<session>.<participant|0>.<nonce>.<expires>.<signature>``: a truncated HMAC-SHA256
of its fields under the app's secret key and a purpose of its own, so a play ticket is never a
phone ticket nor the reverse. docs/security.md, "Pairing a phone".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import segno

PAIRING_TTL_S = 600.0
# 24 letters and digits no one confuses (no 0/O/Q, 1/I/L, 2/Z, 5/S, 6/G, 8/B): 24**6, about
# 191 million codes, against a few hundred guesses a day (GuessLimit).
CODE_ALPHABET = "ACDEFHJKMNPRTUVWXY345789"
CODE_LENGTH = 6
MAX_PHONE_TICKET_CHARS = 200
_PREFIX = "phone"


def new_code() -> str:
    """A random pairing code."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(text: str) -> str | None:
    """The code as typed (any case, spaces or dashes between), or None when it cannot be one."""
    code = "".join(ch for ch in text.upper() if ch not in " -")
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code


@dataclass(frozen=True)
class PhoneTicket:
    """What a ticket with a valid signature says (expired or not: the session decides)."""

    session_id: str
    participant_id: int | None
    nonce: str
    expires: float


def _sign(secret_key: str, body: str) -> str:
    digest = hmac.new(secret_key.encode(), f"phone-ticket:{body}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()[:24]).decode().rstrip("=")


def issue_ticket(secret_key: str, session_id: str, participant_id: int | None, nonce: str,
                 expires: float) -> str:  # fmt: skip
    """The phone's ticket for this pairing of this session."""
    body = f"{_PREFIX}.{session_id}.{participant_id or 0}.{nonce}.{int(expires)}"
    return f"{body}.{_sign(secret_key, body)}"


def read_ticket(secret_key: str, ticket: str | None) -> PhoneTicket | None:
    """The ticket's fields, or None when it is malformed or forged."""
    if not ticket or len(ticket) > MAX_PHONE_TICKET_CHARS or not ticket.isascii():
        return None
    parts = ticket.split(".")
    if len(parts) != 6 or parts[0] != _PREFIX:
        return None
    _, session_id, participant, nonce, expires, signature = parts
    if not (participant.isdigit() and expires.isdigit() and len(participant) <= 12
            and len(expires) <= 12 and session_id.isalnum() and nonce.isalnum()):  # fmt: skip
        return None
    if not hmac.compare_digest(_sign(secret_key, ".".join(parts[:5])), signature):
        return None
    return PhoneTicket(session_id, int(participant) or None, nonce, float(expires))


def page_url(origin: str, ticket: str) -> str | None:
    """The phone page's address under the player page's ``origin`` (None: not an origin)."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}/phone.html#ticket={ticket}"


def qr_svg(url: str) -> str:
    """The QR code of ``url`` as an SVG data URI (dark on white, a quiet zone around)."""
    return str(segno.make(url, error="m").svg_data_uri(scale=4, border=2))


@dataclass
class Pairing:
    """A code on its way to a phone: which session's pairing it is, until when."""

    session_id: str
    nonce: str
    ticket: str
    expires: float


class CodeBook:
    """The codes shown on player pages of this process (one per session at most)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._codes: dict[str, Pairing] = {}

    def add(self, pairing: Pairing) -> str:
        """A fresh code for ``pairing`` (the session's earlier code is dropped)."""
        self.drop_session(pairing.session_id)
        self._prune()
        code = new_code()
        while code in self._codes:
            code = new_code()
        self._codes[code] = pairing
        return code

    def redeem(self, code: str) -> Pairing | None:
        """The pairing of a live code, which is used up; None when there is none."""
        self._prune()
        return self._codes.pop(code, None)

    def drop_session(self, session_id: str) -> None:
        """Forget a session's code (a new one replaced it, or the session ended)."""
        for code in [c for c, p in self._codes.items() if p.session_id == session_id]:
            del self._codes[code]

    def _prune(self) -> None:
        now = self.clock()
        for code in [c for c, p in self._codes.items() if p.expires < now]:
            del self._codes[code]


class GuessLimit:
    """Wrong codes in a sliding window, per client address and over all addresses.

    Per address: ``per_address`` wrong codes in ``window_s``; over every address together
    ``overall`` (a botnet's many addresses share it). Codes last ten minutes and are 1 in
    191 million: at these limits a guess succeeds about once in many thousand days."""

    def __init__(self, per_address: int = 10, overall: int = 200, window_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.per_address, self.overall, self.window_s = per_address, overall, window_s
        self.clock = clock
        self._by_address: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()

    def _trim(self, times: deque[float]) -> deque[float]:
        cutoff = self.clock() - self.window_s
        while times and times[0] < cutoff:
            times.popleft()
        return times

    def retry_after(self, address: str) -> int:
        """Seconds until ``address`` may guess again (0: now)."""
        mine = self._trim(self._by_address.get(address, deque()))
        every = self._trim(self._all)
        waits = [t + self.window_s - self.clock()
                 for times, cap in ((mine, self.per_address), (every, self.overall))
                 if len(times) >= cap for t in (times[len(times) - cap],)]  # fmt: skip
        return max(1, int(max(waits)) + 1) if waits else 0

    def failed(self, address: str) -> None:
        """One more wrong code from ``address``."""
        now = self.clock()
        self._by_address.setdefault(address, deque()).append(now)
        self._all.append(now)
        if len(self._by_address) > 10_000:  # forget addresses whose window has passed
            for key in [k for k, v in self._by_address.items() if not self._trim(v)]:
                del self._by_address[key]
