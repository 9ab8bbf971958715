"""Completion, full and screen-out codes of a crowd study, and where each sends the participant
(the study's URL, MTurk's submit form, Prolific's completion page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from server.models import Participant, Platform
from server.study_spec import CrowdSettings

PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"


def _fill(url: str, code: str) -> str:
    return url.replace("{code}", quote(code, safe=""))


def _outcome(code: str, url: str, participant: Participant, submit: bool) -> dict[str, Any]:
    """A code and its redirect. An MTurk worker's HIT is submitted (``submit``) whatever URL
    the study names, since MTurk pays only a submitted assignment; then the study's URL; then
    Prolific's completion page with the code; else none (the page shows the code)."""
    redirect: dict[str, Any] | None = None
    if submit and participant.platform == Platform.mturk and participant.submit_to:
        target = participant.submit_to.rstrip("/") + "/mturk/externalSubmit"
        fields = {"assignmentId": participant.platform_session_id or "", "completion_code": code}
        redirect = {"method": "POST", "url": target, "fields": fields}
    elif url:
        redirect = {"method": "GET", "url": _fill(url, code), "fields": {}}
    elif participant.platform == Platform.prolific and code:
        target = f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code})}"
        redirect = {"method": "GET", "url": target, "fields": {}}
    return {"code": code, "redirect": redirect}


def completion(crowd: CrowdSettings, participant: Participant) -> dict[str, Any]:
    """The completion code and where to send the participant with it."""
    return _outcome(crowd.completion_code, crowd.completion_url, participant, submit=True)


def full_outcome(crowd: CrowdSettings, participant: Participant) -> dict[str, Any]:
    """The study filled up before the participant finished: the designer's ``full_code`` and
    ``full_url`` (Prolific: a screen-out or no-code return; MTurk: the HIT is submitted with
    this code, for the requester to approve or not)."""
    return _outcome(crowd.full_code, crowd.full_url, participant, submit=True)


def screenout(crowd: CrowdSettings, participant: Participant) -> dict[str, Any]:
    """The screen-out code and redirect (consent declined; an MTurk worker returns the HIT)."""
    return _outcome(crowd.screenout_code, crowd.screenout_url, participant, submit=False)
