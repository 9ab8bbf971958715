"""A phone paired with a participant's session: the code, the ticket, its limits, the
second phone, the end of the session, and what the phone may send."""

from __future__ import annotations

import contextlib
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from server.player import phone
from server.player.phone import PHONE_SUBPROTOCOL, PhoneLink, parse_phone
from server.player.phone_pairing import issue_ticket, qr_svg, read_ticket
from server.player.protocol import BadMessage
from server.player.views import controls_legend
from server.services.crowd.phone_codes import CODE_ALPHABET, normalize_code
from tests.player.conftest import Player, activate, counter_env, spec, ticket_socket

ORIGIN = "http://testserver"


def _phone_env():
    env = counter_env(episode_len=1000)
    env["controls"]["keys"]["PhoneGrip"] = 2  # the study binds the phone
    return env


@pytest.fixture
def settings(settings, request):  # type: ignore[no-untyped-def]
    """The test settings, with ``STUDIO_PUBLIC_URL`` when a test passes one (indirect)."""
    public = getattr(request, "param", "")
    return settings.model_copy(update={"public_url": public}) if public else settings


@pytest.fixture
def joined(factory, designer, db):
    """A participant's client and play ticket on an active study that binds the phone."""
    anonymous = {"allow_anonymous": True}
    study = activate(db, factory.study(designer, spec(_phone_env(), crowd=anonymous)))
    client = factory.client()
    res = client.post("/api/play/join", json={"token": study.permalink_token, "params": {}})
    assert res.status_code == 200, res.text
    return client, res.json()["ticket"]


@contextlib.contextmanager
def _page(client, ticket):
    """The player page's socket, past its hello."""
    with ticket_socket(client, ticket) as ws:
        player = Player(ws)
        player.until("hello")
        yield player


def _phone_ticket(player: Player) -> str:
    """A new pairing's ticket, as the QR code's link carries it."""
    return _link_ticket(_pairing(player))


def _link_ticket(pairing: dict) -> str:
    return parse_qs(urlsplit(pairing["url"]).fragment)["ticket"][0]


def _pairing(player: Player) -> dict:
    player.send(type="phone_pair", origin=ORIGIN)
    return player.until("phone_pairing")


def _phone(client, ticket):
    return client.websocket_connect("/ws/phone", subprotocols=[PHONE_SUBPROTOCOL,
                                                               f"ticket.{ticket}"])  # fmt: skip


def _recv(ws) -> dict:
    message = ws.receive()
    if message["type"] == "websocket.close":
        return {"type": "closed", "code": message.get("code")}
    return json.loads(message["text"])


def _until_closed(ws) -> list[dict]:
    got = []
    for _ in range(20):
        got.append(_recv(ws))
        if got[-1]["type"] == "closed":
            return got
    raise AssertionError(f"not closed: {got}")


def test_right_code_pairs_and_the_player_page_sees_the_phone(joined):
    client, ticket = joined
    with _page(client, ticket) as player:
        pairing = _pairing(player)
        code = pairing["code"]
        assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
        assert pairing["url"].startswith(f"{ORIGIN}/phone.html#ticket=phone.")
        replica = client.app.state.settings.replica_id
        assert pairing["url"].endswith(f"&replica={replica}") and pairing["replica"] == replica
        assert pairing["qr"].startswith("data:image/svg+xml")
        typed = f"{code[:3].lower()} {code[3:]}"  # any case, a space between
        res = client.post("/api/phone/pair", json={"code": typed})
        assert res.status_code == 200, res.text
        assert res.json() == {"ticket": _link_ticket(pairing), "replica": replica}
        again = client.post("/api/phone/pair", json={"code": code})  # used once only
        assert again.status_code == 404 and "Show a new code" in again.json()["detail"]
        with _phone(client, res.json()["ticket"]) as phone_ws:
            assert _recv(phone_ws)["type"] == "phone_hello"
            assert player.until("phone")["state"] == "connected"
            phone_ws.send_text(json.dumps({"type": "phone_input", "axes": [0.5, -0.2, 0],
                                           "keys": ["PhoneClutch"]}))  # fmt: skip
            phone_ws.send_text(json.dumps({"type": "ping"}))
            assert _recv(phone_ws)["type"] == "pong"
        assert player.until("phone")["state"] == "lost"  # the page says so; nothing ends
        # the lost phone comes back with its ticket (the page reconnects by itself)
        with _phone(client, res.json()["ticket"]) as phone_ws:
            assert _recv(phone_ws)["type"] == "phone_hello"
            assert player.until("phone")["state"] == "connected"


def test_the_phone_stays_paired_across_a_reload_of_the_player_page(joined):
    client, ticket = joined
    with ticket_socket(client, ticket) as ws:
        player = Player(ws)
        session = player.until("hello")["session_id"]
        phone_ticket = _phone_ticket(player)
        with _phone(client, phone_ticket) as phone_ws:
            assert _recv(phone_ws)["type"] == "phone_hello"
            player.until("phone")
            ws.close()  # the page reloads: the same session, the phone still on it
            with ticket_socket(client, ticket, f"session={session}") as again:
                reloaded = Player(again)
                assert reloaded.until("hello")["resumed"] is True
                assert reloaded.until("phone")["state"] == "connected"
                phone_ws.send_text(json.dumps({"type": "ping"}))
                assert _recv(phone_ws)["type"] == "pong"


def test_wrong_codes_are_refused_then_limited(joined):
    client, ticket = joined
    with _page(client, ticket) as player:
        code = _pairing(player)["code"]
        not_it = next(c for c in CODE_ALPHABET if c != code[0]) + code[1:]
        wrong = client.post("/api/phone/pair", json={"code": not_it})
        assert wrong.status_code == 404 and "not valid" in wrong.json()["detail"]
        typo = client.post("/api/phone/pair", json={"code": "O0O0O0"})
        assert typo.status_code == 422 and "6 letters and digits" in typo.json()["detail"]
        for _ in range(8):
            client.post("/api/phone/pair", json={"code": not_it})
        limited = client.post("/api/phone/pair", json={"code": code})  # even the right one
        assert limited.status_code == 429 and "Too many wrong codes" in limited.json()["detail"]
        assert int(limited.headers["Retry-After"]) > 0
        bad = client.post("/api/phone/pair", json={"code": "x" * 500})
        assert bad.status_code == 422  # too long for the body's schema: never a 500


def test_an_expired_pairing_is_refused(joined, monkeypatch):
    client, ticket = joined
    monkeypatch.setattr(phone, "PAIRING_TTL_S", -1.0)
    with _page(client, ticket) as player:
        pairing = _pairing(player)
        res = client.post("/api/phone/pair", json={"code": pairing["code"]})
        assert res.status_code == 404
        with _phone(client, _link_ticket(pairing)) as phone_ws:
            got = _until_closed(phone_ws)
        assert got[0]["code"] == "expired" and "show a new code" in got[0]["message"]
        assert got[-1]["code"] == 1008
        with _phone(client, "phone.forged.0.ab.99999999999.xyz") as phone_ws:
            assert _until_closed(phone_ws)[0]["code"] == "invalid_ticket"


def test_a_ticket_of_another_replica_is_refused_with_its_name(joined):
    """A phone whose socket the load balancer did not route to the session's replica."""
    client, ticket = joined
    settings = client.app.state.settings
    with _page(client, ticket) as player:
        mine = read_ticket(settings.secret_key, _phone_ticket(player))
        assert mine is not None and mine.replica == settings.replica_id
        # the same pairing, as if its session ran on the replica app2
        elsewhere = issue_ticket(settings.secret_key, mine.session_id, mine.participant_id,
                                 mine.nonce, mine.expires, "app2")  # fmt: skip
        with _phone(client, elsewhere) as phone_ws:
            got = _until_closed(phone_ws)
        assert got[0]["code"] == "wrong_server" and got[-1]["code"] == 1008
        assert "/ws/phone?replica=app2" in got[0]["message"]
        assert f"reached server {settings.replica_id}" in got[0]["message"]


def test_a_second_phone_waits_for_the_participant(joined):
    client, ticket = joined
    with _page(client, ticket) as player:
        first = _phone_ticket(player)
        second = _phone_ticket(player)
        with _phone(client, first) as one:
            assert _recv(one)["type"] == "phone_hello"
            with _phone(client, second) as two:
                assert _recv(two)["type"] == "waiting_confirm"
                while not player.until("phone")["request"]:
                    pass  # first the page heard of phone one
                player.send(type="phone_confirm", accept=False)
                got = _until_closed(two)
                assert got[0]["code"] == "refused" and got[-1]["code"] == 1008
            with _phone(client, second) as two:
                assert _recv(two)["type"] == "waiting_confirm"
                while not player.until("phone")["request"]:
                    pass
                player.send(type="phone_confirm", accept=True)
                assert _recv(two)["type"] == "phone_hello"
                replaced = _until_closed(one)
                assert replaced[0]["code"] == "replaced" and replaced[-1]["code"] == 4000
        player.send(type="phone_confirm", accept=True)  # nobody waits: an error, no 500
        assert player.until("error")["code"] == "no_request"


def test_the_session_end_revokes_the_pairing(joined):
    client, ticket = joined
    with _page(client, ticket) as player:
        pairing = _pairing(player)
        spare = _pairing(player)  # a code still unused when the session ends
        phone_ticket = _link_ticket(pairing)
        with _phone(client, phone_ticket) as phone_ws:
            assert _recv(phone_ws)["type"] == "phone_hello"
            player.send(type="end_session")
            got = _until_closed(phone_ws)
            assert got[0]["type"] == "session_ended" and got[-1]["code"] == 4001
    with _phone(client, phone_ticket) as phone_ws:
        assert _until_closed(phone_ws)[0]["code"] == "session_ended"
    assert client.post("/api/phone/pair", json={"code": spare["code"]}).status_code == 404


def test_the_pairing_names_the_page_origin_and_says_when_no_phone_reaches_it(joined):
    client, ticket = joined
    with _page(client, ticket) as player:
        assert _pairing(player)["loopback"] is False  # http://testserver
        for origin in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
            player.send(type="phone_pair", origin=origin)
            pairing = player.until("phone_pairing")
            assert pairing["url"].startswith(f"{origin}/phone.html#ticket=phone.")
            assert pairing["loopback"] is True, origin


@pytest.mark.parametrize("settings", ["https://studio.example.org"], indirect=True)
def test_the_pairing_link_and_qr_code_use_the_public_url(joined):
    client, ticket = joined
    assert client.app.state.settings.public_url == "https://studio.example.org"
    with _page(client, ticket) as player:
        player.send(type="phone_pair", origin="http://127.0.0.1:8000")  # the page's own address
        pairing = player.until("phone_pairing")
        assert pairing["url"].startswith("https://studio.example.org/phone.html#ticket=phone.")
        assert pairing["loopback"] is False
        # the QR code is the public link's: the same SVG as a QR code made of it here
        assert pairing["qr"] == qr_svg(pairing["url"])
        # and the link pairs: its ticket is the one the code gives
        res = client.post("/api/phone/pair", json={"code": pairing["code"]})
        assert res.json()["ticket"] == _link_ticket(pairing)


def test_bad_phone_messages_get_errors(joined):
    client, ticket = joined
    with _page(client, ticket) as player:
        phone_ticket = _phone_ticket(player)
        player.send(type="phone_pair", origin="javascript:alert(1)")
        assert player.until("error")["code"] == "invalid"
        with _phone(client, phone_ticket) as phone_ws:
            _recv(phone_ws)
            for text in ('{"type": "phone_input", "axes": [2]}', "nonsense",
                         '{"type": "phone_input", "axes": [NaN]}',
                         '{"type": "phone_input", "axes": [0,0,0,0,0,0,0,0,0]}',
                         '{"type": "phone_input", "keys": ["Space"]}',
                         '{"type": "start"}'):  # fmt: skip
                phone_ws.send_text(text)
                assert _recv(phone_ws)["type"] == "error"
            phone_ws.send_text("x" * 5000)
            got = _until_closed(phone_ws)
            assert got[0]["code"] == "too_large" and got[-1]["code"] == 1008


def test_a_study_without_the_phone_gives_no_pairing(factory, designer, db):
    anonymous = {"allow_anonymous": True}
    study = activate(db, factory.study(designer, spec(counter_env(), crowd=anonymous)))
    client = factory.client()
    ticket = client.post("/api/play/join", json={"token": study.permalink_token,
                                                 "params": {}}).json()["ticket"]  # fmt: skip
    with ticket_socket(client, ticket) as ws:
        player = Player(ws)
        assert player.until("hello")["study"]["phone"] is False
        player.send(type="phone_pair", origin=ORIGIN)
        assert player.until("error")["code"] == "no_phone"


def test_phone_input_is_merged_into_the_page_input():
    link = PhoneLink("s1", None)
    raw = {"keys": ["KeyW", "PhoneGrip"], "buttons": {}, "axes": [], "devices": {}}
    assert link.merged(raw) is raw  # no phone input: the page's own
    link.set_input([0.5, -1.0, 0.0], ["PhoneGrip", "PhoneClutch"])
    merged = link.merged(raw)
    assert merged["devices"]["phone"] == [0.5, -1.0, 0.0]
    assert merged["keys"] == ["KeyW", "PhoneClutch", "PhoneGrip"]
    assert normalize_code("ab-c") is None
    assert read_ticket("k", "phone.a.0.b.1.sig") is None
    with pytest.raises(BadMessage):
        parse_phone('{"type": "phone_input", "axes": [1e400]}')


def test_the_phone_is_named_in_the_legend_and_gives_no_page_keys():
    tilt = {"source": "phone", "axis": 0, "dim": 0, "scale": -0.3}
    info = {"controls": {"bindings": {"Space": [0, 0, 0, -2], "PhoneGrip": [0, 0, 0, -2]},
                         "labels": {"PhoneGrip": "close / open", "phone 0": "hand away"},
                         "axes": [tilt]}}  # fmt: skip
    legend = controls_legend(info)
    assert {"input": "phone grip", "label": "close / open"} in legend["legend"]
    assert {"input": "phone tilt forward / back", "label": "hand away"} in legend["legend"]
    assert legend["keys"] == ["Space"] and [b["input"] for b in legend["touch"]] == ["Space"]
    assert legend["devices"] == ["phone"]
