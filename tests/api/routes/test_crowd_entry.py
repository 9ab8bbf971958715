"""Entering a crowd study: preview, Prolific / MTurk / typed / anonymous joins, odd ids,
closed links, consent, the ticket header."""

from __future__ import annotations

import pytest

from server.models import Participant, StudyState
from server.services.studies import studies
from tests.player.conftest import activate, counter_env, spec

PROLIFIC = {"PROLIFIC_PID": "5f8a0c0ffee0123456789abc", "STUDY_ID": "st-1", "SESSION_ID": "se-1"}
MTURK = {"workerId": "A1B2C3D4E5", "assignmentId": "3ABCDEF", "hitId": "HIT9",
         "turkSubmitTo": "https://workersandbox.mturk.com"}  # fmt: skip


def _study(factory, db, **crowd):
    designer = factory.user()
    return activate(db, factory.study(designer, spec(counter_env(), crowd=crowd)))


def _join(client, study, **body):
    return client.post("/api/play/join", json={"token": study.permalink_token, **body})


def _me(client, ticket):
    return client.get("/api/play/me", headers={"X-Play-Ticket": ticket})


def test_preview_shows_the_study_and_creates_nobody(factory, db):
    study = _study(factory, db, consent="I *agree*.")
    anon = factory.client()
    res = anon.post("/api/play/preview", json={"token": study.permalink_token})
    assert res.status_code == 200, res.text
    assert res.json()["state"] == "active"
    assert "<em>agree</em>" in res.json()["study"]["consent_html"]
    assert db.query(Participant).count() == 0
    missing = anon.post("/api/play/preview", json={"token": "nope"})
    assert missing.status_code == 404
    assert missing.json()["detail"] == "This study link is no longer valid."


def test_prolific_join_stores_the_platform_ids(factory, db):
    study = _study(factory, db)
    anon = factory.client()
    res = _join(anon, study, params={**PROLIFIC, "utm_source": "ignored"})
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["participant_id"] == PROLIFIC["PROLIFIC_PID"]
    state = body["participant"]
    assert state["platform"] == "prolific" and state["consent_required"] is False
    assert state["progress"]["counter"] == {"completed": 0, "required": 1, "full": False,
                                            "failed": False, "status": "open"}  # fmt: skip
    row = db.query(Participant).one()
    assert (row.platform, row.platform_study_id, row.platform_session_id) == (
        "prolific", "st-1", "se-1")  # fmt: skip
    assert _me(anon, body["ticket"]).json()["external_id"] == PROLIFIC["PROLIFIC_PID"]


def test_mturk_join_and_preview(factory, db):
    study = _study(factory, db)
    anon = factory.client()
    preview = _join(anon, study, params={**MTURK, "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"})
    assert preview.status_code == 409 and preview.json()["code"] == "preview"
    assert db.query(Participant).count() == 0
    res = _join(anon, study, params=MTURK)
    assert res.status_code == 200, res.text
    row = db.query(Participant).one()
    assert (row.platform, row.external_id, row.platform_session_id, row.submit_to) == (
        "mturk", "A1B2C3D4E5", "3ABCDEF", "https://workersandbox.mturk.com")  # fmt: skip
    for elsewhere in ("javascript:alert(1)", "https://evil.example", "http://www.mturk.com",
                      "https://www.mturk.com.evil.example"):  # fmt: skip
        bad = _join(anon, study, params={**MTURK, "turkSubmitTo": elsewhere})
        assert bad.status_code == 422 and "turkSubmitTo" in str(bad.json()["detail"])


def test_typed_and_anonymous_ids(factory, db):
    closed_door = _study(factory, db)
    anon = factory.client()
    assert _join(anon, closed_door).status_code == 422  # no id, anonymous not allowed
    assert _join(anon, closed_door, participant_id="  typed-1 ").json()["participant_id"] == (
        "typed-1"
    )
    assert db.query(Participant).one().platform == "direct"
    open_door = _study(factory, db, allow_anonymous=True)
    body = _join(anon, open_door).json()
    assert body["participant_id"].startswith("anon-")
    assert body["participant"]["platform"] == "anonymous"
    again = _join(anon, open_door, participant_id=body["participant_id"]).json()
    assert again["participant"]["platform"] == "anonymous"  # the same participant came back


@pytest.mark.parametrize("odd", ["<script>alert(1)</script>", "Jos\u00e9-\u00fc\u4e2d", "x" * 200,
                                 "a\"b'c&d"])  # fmt: skip
def test_odd_ids_are_stored_as_they_are(factory, db, odd):
    study = _study(factory, db)
    res = _join(factory.client(), study, participant_id=odd)
    assert res.status_code == 200, res.text
    assert db.query(Participant).one().external_id == odd


@pytest.mark.parametrize("odd, says", [
    ("x" * 201, "too long"), ("a\x00b", "NUL"), ("a\x07b", "control"), ("a\u202eb", "control"),
    ("two words", "spaces"), ("user:1", "reserved"), ("   ", "empty"),
])  # fmt: skip
def test_bad_ids_get_a_clear_422(factory, db, odd, says):
    study = _study(factory, db)
    res = _join(factory.client(), study, params={"PROLIFIC_PID": odd})
    assert res.status_code == 422
    assert says in str(res.json()).replace("NUL character", "NUL")
    assert db.query(Participant).count() == 0


def test_a_participant_cannot_take_a_designers_test_play_id(factory, db):
    """``user:<id>`` names a designer's test plays in filters and exports."""
    study = _study(factory, db)
    res = _join(factory.client(), study, participant_id=f"user:{study.owner_id}")
    assert res.status_code == 422 and "reserved" in str(res.json())
    assert db.query(Participant).count() == 0
    res = _join(factory.client(), study, participant_id="users-7")
    assert res.status_code == 200, res.text
    assert db.query(Participant).one().external_id == "users-7"


@pytest.mark.parametrize("state, word", [("paused", "paused"), ("closed", "ended")])
def test_paused_and_closed_links_say_which(factory, db, state, word):
    study = _study(factory, db)
    studies.change_state(db, study, StudyState(state))
    anon = factory.client()
    res = _join(anon, study, participant_id="P-1")
    assert res.status_code == 409 and res.json()["code"] == state
    assert word in res.json()["detail"]
    preview = anon.post("/api/play/preview", json={"token": study.permalink_token})
    assert preview.json()["state"] == state


def test_rotated_link_and_its_tickets_are_no_longer_valid(factory, db):
    study = _study(factory, db)
    anon = factory.client()
    old_token = study.permalink_token
    ticket = _join(anon, study, participant_id="P-1").json()["ticket"]
    assert _me(anon, ticket).status_code == 200
    studies.rotate_permalink(db, study)
    res = anon.post("/api/play/join", json={"token": old_token, "participant_id": "P-1"})
    assert res.status_code == 404 and "no longer valid" in res.json()["detail"]
    assert _me(anon, ticket).status_code == 401
    assert anon.get("/api/play/me").status_code == 401
    assert _me(anon, "1.1.99999999999.forged").status_code == 401


def test_consent_accept_and_decline(factory, db):
    study = _study(factory, db, consent="Agree?", screenout_code="NOCONSENT",
                   screenout_url="https://example.org/out?c={code}")  # fmt: skip
    anon = factory.client()
    yes = _join(anon, study, params=PROLIFIC).json()
    assert yes["participant"]["consent_required"] and not yes["participant"]["consented"]
    accepted = anon.post("/api/play/consent", json={"accept": True},
                         headers={"X-Play-Ticket": yes["ticket"]})  # fmt: skip
    assert accepted.status_code == 200 and accepted.json()["consented"] is True
    no = _join(anon, study, participant_id="P-2").json()
    declined = anon.post("/api/play/consent", json={"accept": False},
                         headers={"X-Play-Ticket": no["ticket"]}).json()  # fmt: skip
    assert declined["screened_out"] is True
    assert declined["screenout"] == {
        "code": "NOCONSENT",
        "redirect": {"method": "GET", "url": "https://example.org/out?c=NOCONSENT", "fields": {}},
    }
    # declining is final: accepting afterwards changes nothing
    later = anon.post("/api/play/consent", json={"accept": True},
                      headers={"X-Play-Ticket": no["ticket"]}).json()  # fmt: skip
    assert later["screened_out"] and not later["consented"]
    assert later["screenout_reason"] == "declined"


def test_leaving_at_the_device_check_is_told_from_declining(factory, db):
    study = _study(factory, db, consent="Agree?", inputs=["keyboard"])
    anon = factory.client()
    who = _join(anon, study, participant_id="P-phone").json()
    ticket = {"X-Play-Ticket": who["ticket"]}
    for bad in ("phone", "", None, 1):  # only the two places a participant leaves from
        res = anon.post("/api/play/consent", json={"accept": False, "at": bad}, headers=ticket)
        assert res.status_code == 422, res.text
    assert anon.get("/api/play/me", headers=ticket).json()["screened_out"] is False
    left = anon.post("/api/play/consent", json={"accept": False, "at": "device"},
                     headers=ticket).json()  # fmt: skip
    assert left["screened_out"] and left["screenout_reason"] == "device"
    row = db.query(Participant).filter_by(study_id=study.id).one()
    assert row.screenout_reason == "device" and row.consented_at is None


def test_the_study_view_says_which_inputs_the_study_needs(factory, db):
    anon = factory.client()
    plain = _study(factory, db)
    res = anon.post("/api/play/preview", json={"token": plain.permalink_token})
    assert res.json()["study"]["inputs"] == ["keyboard", "gamepad"]  # the default
    touch = _study(factory, db, inputs=["touch", "keyboard"])
    res = anon.post("/api/play/preview", json={"token": touch.permalink_token})
    assert res.json()["study"]["inputs"] == ["touch", "keyboard"]


@pytest.mark.parametrize("inputs, where", [
    (["keyboard", "mouse"], ["body", "spec", "crowd", "inputs", 1]),
    ([], ["body", "spec", "crowd", "inputs"]),
    (["touch", "touch"], ["body", "spec", "crowd", "inputs"]),
    ("keyboard", ["body", "spec", "crowd", "inputs"]),
])  # fmt: skip
def test_unknown_or_repeated_inputs_are_refused_naming_the_field(factory, inputs, where):
    client = factory.client(factory.user())
    res = client.post("/api/studies", json={"spec": spec(counter_env(), crowd={"inputs": inputs})})
    assert res.status_code == 422, res.text
    assert where in [err["loc"] for err in res.json()["detail"]]
