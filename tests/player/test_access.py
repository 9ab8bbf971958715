"""Who may open a play socket: designers of the study, participants with a ticket."""

from __future__ import annotations

import pytest
from starlette.websockets import WebSocketDisconnect

from server.models import Participant
from server.player import tickets
from tests.player.conftest import Player, activate, counter_env, spec


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
    assert tickets.verify(settings.secret_key, again["ticket"]).participant_id == rows[0].id
    with anon.websocket_connect(f"/ws/play?ticket={body['ticket']}") as ws:
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
    from server.services import studies

    studies.change_state(db, studies_paused, StudyState.paused)
    assert _join(anon, studies_paused.permalink_token).status_code == 409
    assert draft.permalink_token is None


@pytest.mark.parametrize("query", ["", "study=1", "ticket=1.1.9999999999.forged", "ticket=garbage"])
def test_unauthenticated_sockets_are_refused(factory, designer, query):
    factory.study(designer, spec(counter_env()))
    anon = factory.client()
    with pytest.raises(WebSocketDisconnect) as err:
        with anon.websocket_connect(f"/ws/play?{query}") as ws:
            ws.receive_text()
    assert err.value.code == 1008


def test_expired_ticket_and_other_designers_study_are_refused(factory, designer, db, settings):
    study = activate(db, factory.study(designer, spec(counter_env())))
    other = factory.client(factory.user())
    with pytest.raises(WebSocketDisconnect) as err:
        with other.websocket_connect(f"/ws/play?study={study.id}") as ws:
            ws.receive_text()
    assert err.value.code == 1008
    expired = tickets.issue(settings.secret_key, study.id, 1, ttl_s=-10)
    with pytest.raises(WebSocketDisconnect):
        with other.websocket_connect(f"/ws/play?ticket={expired}") as ws:
            ws.receive_text()


def test_another_participants_session_is_refused(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    alice = _join(anon, study.permalink_token, "alice").json()["ticket"]
    bob = _join(anon, study.permalink_token, "bob").json()["ticket"]
    with anon.websocket_connect(f"/ws/play?ticket={alice}") as ws:
        session_id = Player(ws).until("hello")["session_id"]
    # alice's session waits for her to reconnect; bob cannot take it over
    with pytest.raises(WebSocketDisconnect) as err:
        with anon.websocket_connect(f"/ws/play?ticket={bob}&session={session_id}") as ws2:
            ws2.receive_text()
    assert err.value.code == 1008
    with anon.websocket_connect(f"/ws/play?ticket={alice}&session={session_id}") as ws:
        assert Player(ws).until("hello")["resumed"] is True


def test_designer_test_play_view(factory, designer):
    study = factory.study(designer, spec(counter_env()))
    res = factory.client(designer).get(f"/api/play/studies/{study.id}")
    assert res.status_code == 200 and res.json()["ticket"] is None
    assert res.json()["study"]["environments"][0]["name"] == "Counter"
    assert factory.client(factory.user()).get(f"/api/play/studies/{study.id}").status_code == 404
    assert factory.client().get(f"/api/play/studies/{study.id}").status_code == 401
