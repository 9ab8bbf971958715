"""Who may open a play socket: designers of the study, participants with a ticket."""

from __future__ import annotations

import time

import pytest
from starlette.websockets import WebSocketDisconnect

from server.core.config import Settings
from server.models import Participant
from server.player import tickets
from server.services.studies import studies
from tests.player.conftest import Player, activate, counter_env, spec, ticket_socket


def _join(client, token, participant_id="P-1"):
    return client.post("/api/play/join", json={"token": token, "participant_id": participant_id})


def test_participant_joins_and_plays_with_a_ticket(factory, designer, db, settings):
    study = activate(db, factory.study(designer, spec(counter_env(episode_len=2))))
    anon = factory.client()
    res = _join(anon, study.permalink_token, "PROLIFIC_42")
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["study"]["name"] == "Player test" and body["participant_id"] == "PROLIFIC_42"
    assert "<h1>Hi</h1>" in body["study"]["instructions_html"]
    assert "&lt;script&gt;" in body["study"]["instructions_html"]  # html disabled: shown as text
    assert body["study"]["environments"][0]["id"] == "counter"
    again = _join(anon, study.permalink_token, "PROLIFIC_42").json()
    rows = db.query(Participant).filter_by(study_id=study.id).all()
    assert len(rows) == 1 and rows[0].external_id == "PROLIFIC_42"
    verified = tickets.verify(settings.secret_key, again["ticket"], study.permalink_token)
    assert verified.participant_id == rows[0].id
    with ticket_socket(anon, body["ticket"]) as ws:
        assert ws.accepted_subprotocol == "rlds-studio"
        player = Player(ws)
        hello = player.until("hello")
        assert hello["study"]["id"] == study.id
        player.send(type="start", env_id="counter")
        started = player.until("episode_started")
        assert started["episode"]["index"] == 1


def test_join_refuses_bad_links_and_ids(factory, designer, db):
    draft = factory.study(designer, spec(counter_env()))
    anon = factory.client()
    assert _join(anon, "no-such-token").status_code == 404
    active = activate(db, factory.study(designer, spec(counter_env())))
    assert _join(anon, active.permalink_token, "bad id with spaces").status_code == 422
    studies_paused = factory.study(designer, spec(counter_env()))
    activate(db, studies_paused)
    from server.models import StudyState
    from server.services.studies import studies

    studies.change_state(db, studies_paused, StudyState.paused)
    assert _join(anon, studies_paused.permalink_token).status_code == 409
    assert draft.permalink_token is None


def _refused(client, url, subprotocols=None):
    with pytest.raises(WebSocketDisconnect) as err:
        with client.websocket_connect(url, subprotocols=subprotocols) as ws:
            ws.receive_text()
    return err.value.code


@pytest.mark.parametrize(
    ("query", "offered"),
    [("", None), ("study=1", None), ("", ["rlds-studio", "ticket.1.1.9999999999.forged"]),
     ("", ["rlds-studio", "ticket.garbage"]), ("", ["ticket."]), ("", ["rlds-studio"]),
     ("", ["rlds-studio", "ticket.99999999999.1.9999999999.x"])],  # over PostgreSQL's INTEGER
)  # fmt: skip
def test_unauthenticated_sockets_are_refused(factory, designer, query, offered):
    factory.study(designer, spec(counter_env()))
    assert _refused(factory.client(), f"/ws/play?{query}", offered) == 1008


def test_a_ticket_in_the_url_is_refused(factory, designer, db):
    """URLs end up in access logs: a ticket there would let anyone reading them play."""
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    ticket = _join(anon, study.permalink_token).json()["ticket"]
    assert _refused(anon, f"/ws/play?ticket={ticket}") == 1008
    # not even next to a valid one in the header
    offered = ["rlds-studio", f"ticket.{ticket}"]
    assert _refused(anon, f"/ws/play?ticket={ticket}", offered) == 1008
    with ticket_socket(anon, ticket) as ws:
        assert Player(ws).until("hello")["study"]["id"] == study.id


def test_rotating_the_permalink_revokes_its_tickets(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    old = _join(anon, study.permalink_token, "P-9").json()["ticket"]
    res = factory.client(designer).post(f"/api/studies/{study.id}/permalink")
    assert res.status_code == 200, res.text
    db.refresh(study)
    assert _refused(anon, "/ws/play", ["rlds-studio", f"ticket.{old}"]) == 1008
    new = _join(anon, study.permalink_token, "P-9").json()["ticket"]
    with ticket_socket(anon, new) as ws:
        assert Player(ws).until("hello")["study"]["id"] == study.id
    studies.rotate_permalink(db, study)
    assert _refused(anon, "/ws/play", ["rlds-studio", f"ticket.{new}"]) == 1008


def test_tickets_live_for_the_configured_time(factory, designer, db, app):
    default = Settings.model_fields["ticket_ttl_s"].default
    assert 3600 <= default <= 4 * 3600  # a study session, far less than a day
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    for ttl in (default, 600):
        app.state.settings.ticket_ttl_s = ttl
        before = time.time()
        ticket = _join(anon, study.permalink_token).json()["ticket"]
        expires = int(ticket.split(".")[2])
        assert before + ttl - 1 <= expires <= time.time() + ttl + 1


@pytest.mark.parametrize("who", ["user:1", "user:12", "USER:3", "user:x"])
def test_the_designers_test_play_namespace_is_refused(factory, designer, db, who):
    study = activate(db, factory.study(designer, spec(counter_env())))
    res = _join(factory.client(), study.permalink_token, who)
    assert res.status_code == 422
    assert "reserved for designers' test plays" in res.json()["detail"][0]["msg"]
    assert db.query(Participant).filter_by(study_id=study.id).count() == 0


def test_expired_ticket_and_other_designers_study_are_refused(factory, designer, db, settings):
    study = activate(db, factory.study(designer, spec(counter_env())))
    other = factory.client(factory.user())
    with pytest.raises(WebSocketDisconnect) as err:
        with other.websocket_connect(f"/ws/play?study={study.id}") as ws:
            ws.receive_text()
    assert err.value.code == 1008
    expired = tickets.issue(settings.secret_key, study.id, 1, study.permalink_token, ttl_s=-10)
    assert _refused(other, "/ws/play", ["rlds-studio", f"ticket.{expired}"]) == 1008


def test_another_participants_session_is_refused(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    alice = _join(anon, study.permalink_token, "alice").json()["ticket"]
    bob = _join(anon, study.permalink_token, "bob").json()["ticket"]
    with ticket_socket(anon, alice) as ws:
        session_id = Player(ws).until("hello")["session_id"]
    # alice's session waits for her to reconnect; bob cannot take it over
    offered = ["rlds-studio", f"ticket.{bob}"]
    assert _refused(anon, f"/ws/play?session={session_id}", offered) == 1008
    with ticket_socket(anon, alice, f"session={session_id}") as ws:
        assert Player(ws).until("hello")["resumed"] is True


def test_designer_test_play_view(factory, designer):
    study = factory.study(designer, spec(counter_env()))
    res = factory.client(designer).get(f"/api/play/studies/{study.id}")
    assert res.status_code == 200 and res.json()["ticket"] is None
    assert res.json()["study"]["environments"][0]["name"] == "Counter"
    assert factory.client(factory.user()).get(f"/api/play/studies/{study.id}").status_code == 404
    assert factory.client().get(f"/api/play/studies/{study.id}").status_code == 401
