"""Play tickets: what a participant's WebSocket presents, signed with the app's secret key.

A ticket is ``<study_id>.<participant_id>.<expires>.<signature>`` where the signature is a
truncated HMAC-SHA256 of the first three fields and of the study's permalink token at the
time of issue; nothing in it is secret. Rotating the permalink thus revokes every ticket
issued under the old one (their signatures no longer match), and a ticket lives
``settings.ticket_ttl_s`` seconds. A study without a permalink (a draft a designer previews as
a participant) signs its test participants' tickets with a name of its own instead
(:func:`signing_token`), which activation's first permalink revokes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass

from sqlalchemy.orm import Session

from server.models import Participant, Study

MAX_TICKET_CHARS = 200
_MAX_ROW_ID = 2**31 - 1  # ids are 32-bit INTEGER columns on PostgreSQL


@dataclass(frozen=True)
class Ticket:
    """Who a valid ticket lets play."""

    study_id: int
    participant_id: int


def _sign(secret_key: str, body: str, permalink_token: str) -> str:
    message = f"play-ticket:{body}:{permalink_token}".encode()
    digest = hmac.new(secret_key.encode(), message, hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()[:24]).decode().rstrip("=")


def issue(
    secret_key: str, study_id: int, participant_id: int, permalink_token: str, ttl_s: float
) -> str:
    """A ticket for this participant of this study, valid ``ttl_s`` seconds and as long as
    the study's permalink is ``permalink_token``."""
    body = f"{study_id}.{participant_id}.{int(time.time() + ttl_s)}"
    return f"{body}.{_sign(secret_key, body, permalink_token)}"


def study_of(ticket: str | None) -> int | None:
    """The study a ticket names (not verified: look the study up, then :func:`verify`)."""
    if not ticket or len(ticket) > MAX_TICKET_CHARS:
        return None
    parts = ticket.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() and len(p) <= 12 for p in parts[:3]):
        return None
    if int(parts[0]) > _MAX_ROW_ID or int(parts[1]) > _MAX_ROW_ID:
        return None
    return int(parts[0])


def verify(secret_key: str, ticket: str | None, permalink_token: str | None) -> Ticket | None:
    """The ticket's holder, or None when it is malformed, forged, expired, or was issued
    under another permalink token than the study's current ``permalink_token``."""
    if study_of(ticket) is None or not permalink_token:
        return None
    assert ticket is not None
    parts = ticket.split(".")
    body = ".".join(parts[:3])
    if not hmac.compare_digest(_sign(secret_key, body, permalink_token), parts[3]):
        return None
    if int(parts[2]) < time.time():
        return None
    return Ticket(study_id=int(parts[0]), participant_id=int(parts[1]))


def signing_token(study: Study) -> str:
    """What the study's tickets are signed with: its permalink token, else (a draft previewed
    as a participant) a name of its own."""
    return study.permalink_token or f"unpublished-{study.id}"


def holder(db: Session, secret_key: str, ticket: str | None) -> tuple[Study, Participant] | None:
    """The study and participant of a valid ticket (None: forged, expired, issued under a
    replaced permalink, or a real participant's ticket of a study with no permalink)."""
    claimed = study_of(ticket)
    study = db.get(Study, claimed) if claimed is not None else None
    if study is None:
        return None
    valid = verify(secret_key, ticket, signing_token(study))
    participant = db.get(Participant, valid.participant_id) if valid is not None else None
    if participant is None or participant.study_id != study.id:
        return None
    if study.permalink_token is None and not participant.is_test:
        return None
    return study, participant
