"""Study files through the API: hostile files are refused quickly and never stall the server."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from server.core import security
from server.core.config import Settings
from server.services import study_files
from tests.factories import PASSWORD, Factory
from tests.services.test_study_files import billion_laughs, nested

YAML = {"Content-Type": "application/yaml"}


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
