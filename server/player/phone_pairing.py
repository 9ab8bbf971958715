"""Pairing a phone with a play session: the phone's signed ticket and the QR code of the phone
page's address (the codes and the limit on guesses: server/services/crowd/phone_codes.py).

The player page asks its session for a pairing (``phone_pair``); the session keeps its
nonce for :data:`PAIRING_TTL_S` seconds and shows a QR code of
``/phone.html#ticket=<ticket>&replica=<replica>`` and a six-character code, which any replica
exchanges once for the same ticket and replica (``POST /api/phone/pair``). A ticket is
``phone.<session>.<participant|0>.<nonce>.<expires>.<replica>.<signature>`` (the replica that
runs the session, base64url): a truncated HMAC-SHA256 of its fields under the app's secret
key and a purpose of its own, so a play ticket is never a phone ticket nor the reverse. The
phone opens its socket with ``?replica=<replica>``, which the load balancer routes on
(docs/deploy.md); a replica that gets a ticket of another answers so. docs/security.md,
"Pairing a phone".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import segno

PAIRING_TTL_S = 600.0
MAX_PHONE_TICKET_CHARS = 400
_PREFIX = "phone"


@dataclass(frozen=True)
class PhoneTicket:
    """What a ticket with a valid signature says (expired or not: the session decides)."""

    session_id: str
    participant_id: int | None
    nonce: str
    expires: float
    replica: str  # the replica that runs the session


def _sign(secret_key: str, body: str) -> str:
    digest = hmac.new(secret_key.encode(), f"phone-ticket:{body}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()[:24]).decode().rstrip("=")


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def issue_ticket(secret_key: str, session_id: str, participant_id: int | None, nonce: str,
                 expires: float, replica: str) -> str:  # fmt: skip
    """The phone's ticket for this pairing of this session, run by ``replica``."""
    body = f"{_PREFIX}.{session_id}.{participant_id or 0}.{nonce}.{int(expires)}.{_b64(replica)}"
    return f"{body}.{_sign(secret_key, body)}"


def read_ticket(secret_key: str, ticket: str | None) -> PhoneTicket | None:
    """The ticket's fields, or None when it is malformed or forged."""
    if not ticket or len(ticket) > MAX_PHONE_TICKET_CHARS or not ticket.isascii():
        return None
    parts = ticket.split(".")
    if len(parts) != 7 or parts[0] != _PREFIX:
        return None
    _, session_id, participant, nonce, expires, replica, signature = parts
    if not (participant.isdigit() and expires.isdigit() and len(participant) <= 12
            and len(expires) <= 12 and session_id.isalnum() and nonce.isalnum()):  # fmt: skip
        return None
    if not hmac.compare_digest(_sign(secret_key, ".".join(parts[:6])), signature):
        return None
    try:  # signed by us: well formed
        name = base64.urlsafe_b64decode(replica + "=" * (-len(replica) % 4)).decode()
    except ValueError:
        return None
    return PhoneTicket(session_id, int(participant) or None, nonce, float(expires), name)


def page_url(origin: str, ticket: str, replica: str, public_url: str = "") -> str | None:
    """The phone page's address under ``public_url`` (``STUDIO_PUBLIC_URL``) when it is set,
    else under the player page's ``origin`` (None: not an origin)."""
    parts = urlsplit(public_url or origin)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or "@" in parts.netloc:
        return None
    fragment = urlencode({"ticket": ticket, "replica": replica})
    return f"{parts.scheme}://{parts.netloc}/phone.html#{fragment}"


def is_loopback(url: str) -> bool:
    """True when ``url`` names this machine only (127.0.0.1, localhost, ::1): no phone can
    open it."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def qr_svg(url: str) -> str:
    """The QR code of ``url`` as an SVG data URI (dark on white, a quiet zone around)."""
    return str(segno.make(url, error="m").svg_data_uri(scale=4, border=2))
