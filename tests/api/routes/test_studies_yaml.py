"""Study files through the API: hostile files are refused quickly and never stall the server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from server.core import security
from server.core.config import Settings
from server.services.studies import study_files
from tests.factories import PASSWORD, Factory
from tests.services.studies.test_study_files import billion_laughs, nested

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

YAML = {"Content-Type": "application/yaml"}
JSON = {"Content-Type": "application/json"}


def _messages(res: httpx.Response) -> str:
    return " ".join(err["msg"] for err in res.json()["detail"])


@pytest.mark.parametrize("route", ["import", "file"])
def test_billion_laughs_and_deep_nesting_are_422(route, factory):
    owner = factory.user()
    client = factory.client(owner)
    study = factory.study(owner)

    def send(text: str) -> httpx.Response:
        if route == "import":
            return client.post("/api/studies/import", content=text, headers=YAML)
        return client.put(f"/api/studies/{study.id}/file", content=text, headers=YAML)

    bomb = send(billion_laughs())
    assert bomb.status_code == 422, bomb.text
    assert "alias *l0 is not allowed" in _messages(bomb)
    assert len(bomb.content) < 1024
    deep = send(nested(10_000))
    assert deep.status_code == 422, deep.text
    assert f"nested deeper than {study_files.MAX_DEPTH} levels" in _messages(deep)


@pytest.fixture
def roomy(settings: Settings, db) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """A designer's client on an app whose general body limit is above the study-file one."""
    from server.main import create_app

    roomy_settings = settings.model_copy(update={"max_body_bytes": 4 * study_files.MAX_FILE_BYTES})
    made = Factory(db, create_app(roomy_settings))
    yield made.client(made.user())
    made.close()


def test_a_study_file_over_its_limit_is_413_below_the_body_limit(roomy):
    text = "#" * (study_files.MAX_FILE_BYTES + 1)
    res = roomy.post("/api/studies/import", content=text, headers=YAML)
    assert res.status_code == 413, res.text
    assert f"limit {study_files.MAX_FILE_BYTES} bytes" in res.json()["detail"]

    def chunks() -> Iterator[bytes]:
        for _ in range(study_files.MAX_FILE_BYTES // 1024 + 2):
            yield b"#" * 1024

    streamed = roomy.post("/api/studies/import", content=chunks(), headers=YAML)
    assert streamed.status_code == 413


def test_the_event_loop_keeps_answering_while_a_bomb_is_parsed(live_server, factory, monkeypatch):
    """Health checks are answered while the import of a billion laughs is in flight.

    The parse is held open (it waits for the health checks to finish, then runs for real)
    so the order of completions shows whether it ran on the event loop: if it did, no
    health check can finish before it.
    """
    entered, release = threading.Event(), threading.Event()
    real_load = study_files.load_yaml

    def held_load(text: str):  # type: ignore[no-untyped-def]
        entered.set()
        release.wait(timeout=60)
        return real_load(text)

    monkeypatch.setattr(study_files, "load_yaml", held_load)
    user = factory.user()
    done: list[str] = []
    with httpx.Client(base_url=live_server, timeout=120) as client:
        login = client.post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
        assert login.status_code == 200, login.text
        client.headers[security.CSRF_HEADER] = login.json()["csrf_token"]
        answers: dict[str, httpx.Response] = {}

        def post_bomb() -> None:
            answers["bomb"] = client.post("/api/studies/import", content=billion_laughs())
            done.append("bomb")

        def check_health() -> None:
            for i in range(5):
                answers[f"health{i}"] = client.get("/api/health")
                done.append("health")

        bomb = threading.Thread(target=post_bomb)
        bomb.start()
        assert entered.wait(timeout=60), "the import never reached the parser"
        health = threading.Thread(target=check_health)
        health.start()
        health.join(timeout=30)
        release.set()
        bomb.join(timeout=60)
        health.join(timeout=60)
    assert done == ["health"] * 5 + ["bomb"]
    assert all(answers[f"health{i}"].status_code == 200 for i in range(5))
    assert answers["bomb"].status_code == 422
    assert "alias" in answers["bomb"].text


# Every character a study file cannot hold: C0 controls (tab and line breaks are text), DEL,
# C1 controls (NEL is a line break), the non-characters U+FFFE/U+FFFF and lone surrogates.
REFUSED = [*(c for c in range(32) if chr(c) not in "\t\n\r"), 0x7F, 0x80, 0x9F, 0xFFFE, 0xFFFF]
SURROGATES = [0xD800, 0xDFFF]
CARTPOLE = (Path(__file__).resolve().parents[3] / "studies" / "cartpole.yaml").read_text()


def test_every_control_character_on_every_file_route_is_422(factory):
    """Found by an attack: ``name: Cart\\0Pole`` in an import was a 500 (the reader refused it
    before the ``try``). Raw in the file, escaped in a quoted string, or in the JSON spec of
    the editor's routes: always 422, naming the line or the field."""
    owner = factory.user()
    client = factory.client(owner)
    study = factory.study(owner)
    spec = yaml.safe_load(CARTPOLE)
    file_routes = [
        ("POST", "/api/studies/import"),
        ("PUT", f"/api/studies/{study.id}/file"),
        ("POST", f"/api/studies/{study.id}/versions/file"),
        ("POST", "/api/studies/yaml/parse"),
    ]
    json_routes = [
        ("POST", "/api/studies"),
        ("PUT", f"/api/studies/{study.id}"),
        ("POST", f"/api/studies/{study.id}/versions"),
        ("POST", "/api/studies/yaml/render"),
        ("POST", "/api/studies/validate"),
    ]
    for code in REFUSED + SURROGATES:
        char, named = chr(code), "NUL" if code == 0 else f"U+{code:04X}"
        escaped = CARTPOLE.replace("name: ", f'name: "Cart\\u{code:04x}Pole"\nold_name: ', 1)
        files = {"escaped": escaped.encode()}
        if code not in SURROGATES:  # a lone surrogate is not UTF-8: that 422 is tested apart
            files["raw"] = CARTPOLE.replace("name: ", f"name: Cart{char}", 1).encode()
        for form, body in files.items():
            for method, url in file_routes:
                res = client.request(method, url, content=body, headers=YAML)
                assert res.status_code == 422, (code, form, url, res.text)
                says = _messages(res)
                assert named in says or "old_name" in says, (code, form, url, says)
                if form == "raw":
                    assert "line 1, column" in says, says
                else:  # the field, in loc as well as in the message
                    assert res.json()["detail"][0]["loc"] == ["name"], res.text
        body_json = {"spec": {**spec, "name": f"Cart{char}Pole"}}
        for method, url in json_routes:
            # json.dumps writes a lone surrogate as its \u escape, as a hostile client would.
            res = client.request(method, url, content=json.dumps(body_json), headers=JSON)
            assert res.status_code == 422, (code, url, res.text)
            assert named in _messages(res) and "name'" in _messages(res), res.text
            assert res.json()["detail"][0]["loc"][-1] == "name", res.text


def test_a_lone_surrogate_is_not_utf8(factory):
    client = factory.client(factory.user())
    body = CARTPOLE.replace("name: ", "name: Cart\ud800", 1).encode("utf-8", "surrogatepass")
    res = client.post("/api/studies/import", content=body, headers=YAML)
    assert res.status_code == 422
    assert _messages(res) == "not UTF-8"
