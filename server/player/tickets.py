"""Play tickets: what a participant's WebSocket presents, signed with the app's secret key.

A ticket is ``<study_id>.<participant_id>.<expires>.<signature>`` where the signature is a
truncated HMAC-SHA256 of the first three fields; nothing in it is secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass

TICKET_TTL_S = 24 * 3600


@dataclass(frozen=True)
class Ticket:
    """Who a valid ticket lets play."""

    study_id: int
    participant_id: int


def _sign(secret_key: str, body: str) -> str:
    digest = hmac.new(secret_key.encode(), b"play-ticket:" + body.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()[:24]).decode().rstrip("=")


def issue(secret_key: str, study_id: int, participant_id: int, ttl_s: float = TICKET_TTL_S) -> str:
    """A ticket for this participant of this study, valid ``ttl_s`` seconds."""
    body = f"{study_id}.{participant_id}.{int(time.time() + ttl_s)}"
    return f"{body}.{_sign(secret_key, body)}"


def verify(secret_key: str, ticket: str | None) -> Ticket | None:
    """The ticket's holder, or None when it is malformed, forged or expired."""
    if not ticket or len(ticket) > 200:
        return None
    parts = ticket.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts[:3]):
        return None
    body = ".".join(parts[:3])
    if not hmac.compare_digest(_sign(secret_key, body), parts[3]):
        return None
    if int(parts[2]) < time.time():
        return None
    return Ticket(study_id=int(parts[0]), participant_id=int(parts[1]))
