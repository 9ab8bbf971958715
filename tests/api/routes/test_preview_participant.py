"""A designer previews their study as a participant: a made-up TEST participant from
Prolific, MTurk or a direct link walks the crowd flow of a draft; its episodes are test
plays, and it is in no participants list, count or quota."""

from __future__ import annotations

from server.models import Episode, Participant, Role, StudyState
from server.services.crowd import quotas
from server.services.studies import studies
from tests.player.conftest import Player, activate, counter_env, spec, ticket_socket

PREVIEW = "/api/studies/{}/preview-participant"


def _draft(factory, designer, **crowd_block):
    env = counter_env(episode_len=1, episodes_total=1)
    return factory.study(designer, spec(env, crowd={"completion_code": "REAL-CODE", **crowd_block}))


def test_a_draft_is_walked_as_a_prolific_participant_and_recorded_as_test_plays(factory, db):
    designer = factory.user()
    study = _draft(factory, designer, consent="I *agree*.")
    assert study.permalink_token is None  # a draft: no link yet, the preview is its point
    client = factory.client(designer)
    res = client.post(PREVIEW.format(study.id), json={"platform": "prolific"})
    assert res.status_code == 200, res.text
    body = res.json()
    state = body["participant"]
    assert body["participant_id"].startswith("TEST-")
    assert (state["platform"], state["test"], state["study_state"]) == ("prolific", True, "active")
    assert state["consent_required"] and not state["consented"]
    ticket, key = body["ticket"], body["browser_key"]
    headers = {"X-Play-Ticket": ticket, "X-Browser-Key": key}
    anon = factory.client()
    assert anon.post("/api/play/consent", json={"accept": True}, headers=headers).status_code == 200

    with ticket_socket(anon, ticket) as ws:
        player = Player(ws)
        player.start()
        player.step(["KeyA"])
        player.until("episode_ended")
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["status"] == "completed"
    done = anon.post("/api/play/complete", headers=headers)
    assert done.status_code == 200, done.text
    assert done.json()["completion"]["code"] == "REAL-CODE"
    assert done.json()["test"] is True

    db.expire_all()
    row = db.query(Episode).filter_by(study_id=study.id).one()
    assert row.is_test and row.participant_id is not None
    tester = db.query(Participant).one()
    assert tester.is_test and tester.platform_study_id == "TEST-STUDY"
    # the test play fills no quota, and the test participant is nobody's participant
    assert quotas.reserved_totals(db, study.id) == {}
    assert client.get(f"/api/studies/{study.id}/participants").json() == []
    listed = client.get(f"/api/studies/{study.id}/episodes", params={"include_tests": True})
    assert [e["is_test"] for e in listed.json()["items"]] == [True]


def test_direct_preview_checks_the_typed_id_and_keeps_real_and_test_ids_apart(factory, db):
    designer = factory.user()
    study = activate(db, _draft(factory, designer))
    client = factory.client(designer)
    bad = client.post(
        PREVIEW.format(study.id), json={"platform": "direct", "participant_id": "a b"}
    )
    assert bad.status_code == 422
    assert "spaces" in bad.text
    res = client.post(
        PREVIEW.format(study.id), json={"platform": "direct", "participant_id": "bob"}
    )
    assert res.status_code == 200, res.text
    assert res.json()["participant_id"] == "TEST-bob"
    # a real participant who types that id does not enter the test participant
    anon = factory.client()
    taken = anon.post("/api/play/join", json={"token": study.permalink_token,
                                              "participant_id": "TEST-bob"})  # fmt: skip
    assert taken.status_code == 409
    assert "taken" in taken.json()["detail"]
    # and a preview never enters a real participant
    real = anon.post("/api/play/join", json={"token": study.permalink_token,
                                             "participant_id": "TEST-ann"})  # fmt: skip
    assert real.status_code == 200
    clash = client.post(
        PREVIEW.format(study.id), json={"platform": "direct", "participant_id": "ann"}
    )
    assert clash.status_code == 409


def test_only_the_studys_designers_and_admins_preview(factory, db):
    designer = factory.user()
    study = _draft(factory, designer)
    other = factory.client(factory.user())
    assert other.post(PREVIEW.format(study.id), json={"platform": "mturk"}).status_code == 404
    assert (
        factory.client().post(PREVIEW.format(study.id), json={"platform": "mturk"}).status_code
        == 401
    )
    admin = factory.client(factory.user(Role.admin))
    res = admin.post(PREVIEW.format(study.id), json={"platform": "mturk"})
    assert res.status_code == 200, res.text
    assert res.json()["participant"]["platform"] == "mturk"
    odd = admin.post(PREVIEW.format(study.id), json={"platform": "steam"})
    assert odd.status_code == 422


def test_a_preview_ticket_of_a_draft_stops_working_once_the_study_has_a_link(factory, db):
    designer = factory.user()
    study = _draft(factory, designer)
    client = factory.client(designer)
    ticket = client.post(PREVIEW.format(study.id), json={"platform": "prolific"}).json()["ticket"]
    anon = factory.client()
    assert anon.get("/api/play/me", headers={"X-Play-Ticket": ticket}).status_code == 200
    studies.change_state(db, study, StudyState.active)
    assert anon.get("/api/play/me", headers={"X-Play-Ticket": ticket}).status_code == 401
