"""Fuzz every HTTP operation of the OpenAPI schema with schemathesis.

Each operation gets schema-valid and schema-violating requests (a bounded, derandomized
number of each), sent as a logged-in designer who owns a study with recorded episodes, a
step tag, a note and finished export jobs, and as an anonymous client. Whatever is sent,
the app must answer below 500, and every 4xx must be JSON with a ``detail``.

Path ids are drawn half of the time from the real rows, so generated bodies reach the
services and the database instead of stopping at a 404.

Not fuzzed here, covered elsewhere or by hand below:

* ``/ws/play`` is a WebSocket, absent from the OpenAPI schema: its bad input is covered by
  tests/player/test_bad_input.py.
* The static web pages (the ``/`` mount) are not in the schema: a few bad paths below.
* Bodies that are not what the schema declares (non-UTF-8 JSON and YAML, wrong content
  types): by hand below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from server.core.config import Settings
from server.export.runner import ExportRunner
from server.main import create_app
from server.models import Dataset, DatasetEdit, ExportJob, JobState, Note, Role, StepTag
from tests.api.routes.recorded import Inserter, two_env_spec

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

# Per operation and client: this many valid and this many invalid requests.
EXAMPLES = 12
ANONYMOUS_EXAMPLES = 6
BASE = "http://testserver"


def _operations() -> list[tuple[str, str]]:
    """(method, path) of every operation in the app's schema (built without a database)."""
    # Only the schema is read: an in-memory database and an explicit key write no file.
    spec = create_app(
        Settings(database_url="sqlite://", secret_key="schema-only-key-0123456789", _env_file=None)
    ).openapi()
    return [
        (method.upper(), path)
        for path, item in spec["paths"].items()
        for method in item
        if method in {"get", "put", "post", "patch", "delete"}
    ]


OPERATIONS = _operations()


@pytest.fixture
def world(factory, db, settings, recorded, monkeypatch) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A designer's study with two recorded episodes, a step tag, a note, two exports and a
    dataset."""

    # Export jobs are queued but not run: this test is about input handling, and dozens of
    # export processes would not fit the time budget (the exports tests run real ones).
    def claim_nothing(self: ExportRunner, holding_slot: bool = False) -> None:
        if holding_slot and self.budget is not None:
            self.budget.give_back()  # as claim_next does when it starts nothing

    monkeypatch.setattr(ExportRunner, "claim_next", claim_nothing)
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    episodes = [
        ins.add(study, recorded["cartpole"][0], tags=("good",)),
        ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", participant=None),
    ]
    db.add(StepTag(episode_id=episodes[0].id, name="jump", start_step=1, end_step=2))
    db.add(Note(episode_id=episodes[0].id, body="a note", author_id=owner.id))
    done = ExportJob(
        study_id=study.id, owner_id=owner.id, state=JobState.succeeded, selection={},
        options={}, output_path="exports/gone.zip",
    )  # fmt: skip
    failed = ExportJob(
        study_id=study.id, owner_id=owner.id, state=JobState.failed, selection={}, options={}
    )
    dataset = Dataset(owner_id=owner.id, name="set", description="",
                      sources=[{"study_id": study.id, "filter": {}}], split={})  # fmt: skip
    db.add_all([done, failed, dataset])
    db.flush()
    edit = DatasetEdit(dataset_id=dataset.id, kind="exclude", episode_id=episodes[0].id,
                       reason="shaky", author_id=owner.id)  # fmt: skip
    db.add(edit)
    db.commit()
    return {
        "owner": owner,
        "study_ids": [study.id],
        "episode_ids": [e.id for e in episodes],
        "job_ids": [done.id, failed.id],
        "dataset_ids": [dataset.id],
        "edit_ids": [edit.id],
        "tag_ids": [t.id for t in episodes[0].step_tags],
        "user_ids": [owner.id],
        "names": ["good", "jump"],
        "steps": [0, 1, 5],
    }


_REAL = {
    "study_id": "study_ids",
    "episode_id": "episode_ids",
    "job_id": "job_ids",
    "dataset_id": "dataset_ids",
    "edit_id": "edit_ids",
    "tag_id": "tag_ids",
    "user_id": "user_ids",
    "name": "names",
    "step": "steps",
}


def _send(client: TestClient, case: Any) -> Any:
    kwargs = case.as_transport_kwargs(base_url=BASE)
    kwargs.pop("cookies", None)  # the client's own session cookies are kept
    headers = {
        k: v for k, v in kwargs.pop("headers", {}).items() if k.lower() not in {"connection"}
    }
    if "data" in kwargs:
        data = kwargs.pop("data")
        kwargs["content"] = data if isinstance(data, bytes) else str(data).encode()
    return client.request(headers=headers, **kwargs)


def _check(res: Any, case: Any) -> None:
    what = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"
    if res.status_code == 503:  # the background budget is full: a documented answer, no crash
        assert res.json().get("code") == "busy" and res.headers.get("retry-after"), what
        return
    assert res.status_code < 500, f"{res.status_code} on {what}: {res.text[:500]}"
    if 400 <= res.status_code < 500:
        assert res.headers.get("content-type", "").startswith("application/json"), what
        body = res.json()
        assert isinstance(body, dict) and "detail" in body, f"{what}: {body!r}"


_schemas: list[Any] = []  # the app's schema as schemathesis reads it, built once per process


def _schema(client: TestClient) -> Any:
    """The schema of the first test's app: every test builds the same app from the same code
    (only its database and folders differ, which the schema does not show), and building the
    document and reading it took seconds of each test."""
    if not _schemas:
        _schemas.append(schemathesis.openapi.from_dict(client.app.openapi()))  # type: ignore[attr-defined]
    return _schemas[0]


def _fuzz(client: TestClient, method: str, path: str, world: dict[str, Any], n: int) -> int:
    """Send ``n`` valid and ``n`` invalid requests to one operation; returns how many."""
    operation = _schema(client).find_operation_by_path(method.lower(), path)
    assert operation is not None
    sent = 0
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

        @hsettings(
            max_examples=n,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
        def run(case: Any, data: st.DataObject) -> None:
            nonlocal sent
            for name in list(case.path_parameters or {}):
                if name in _REAL and world[_REAL[name]] and data.draw(st.booleans()):
                    case.path_parameters[name] = data.draw(st.sampled_from(world[_REAL[name]]))
            _check(_send(client, case), case)
            sent += 1

        try:
            run()
        except Unsatisfiable:
            # No invalid request exists for an operation whose inputs are all unconstrained
            # strings, or that has none (GET /api/health): its valid requests were still sent.
            if mode is GenerationMode.POSITIVE:
                raise
    return sent


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_fuzz_as_designer(method: str, path: str, world, factory) -> None:  # type: ignore[no-untyped-def]
    client = factory.client(world["owner"])
    assert _fuzz(client, method, path, world, EXAMPLES) > 0
    # Whatever was sent, the designer's session still works.
    assert client.get("/api/auth/me").status_code in (200, 401)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_fuzz_anonymous(method: str, path: str, world, factory) -> None:  # type: ignore[no-untyped-def]
    assert _fuzz(factory.client(), method, path, world, ANONYMOUS_EXAMPLES) > 0


USER_OPERATIONS = [(m, p) for m, p in OPERATIONS if p.startswith("/api/users")]


@pytest.mark.parametrize(
    ("method", "path"), USER_OPERATIONS, ids=[f"{m} {p}" for m, p in USER_OPERATIONS]
)
def test_fuzz_users_as_admin(method: str, path: str, world, factory) -> None:  # type: ignore[no-untyped-def]
    """The users API answers a designer 403 above; an admin gets its validation fuzzed."""
    admin = factory.client(factory.user(Role.admin))
    assert _fuzz(admin, method, path, world, EXAMPLES) > 0


@pytest.fixture
def designer(world, factory) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    yield factory.client(world["owner"])


def test_schema_lists_every_route(app) -> None:  # type: ignore[no-untyped-def]
    """Every HTTP route is in the schema, so none escapes the fuzzing above."""
    in_schema = {(m, p) for m, p in OPERATIONS}
    routes = {
        (method, route.path)
        for route in app.routes
        for method in getattr(route, "methods", None) or ()
        if route.path.startswith("/api/") and method not in {"HEAD", "OPTIONS"}
    }
    assert routes <= in_schema, routes - in_schema


@pytest.mark.parametrize(
    "url",
    [
        "/api/studies/{study}/import",
        "/api/studies/{study}/file",
        "/api/studies/{study}/versions/file",
    ],
)
def test_non_utf8_and_wrong_content_type(url: str, world, designer) -> None:  # type: ignore[no-untyped-def]
    study = world["study_ids"][0]
    bad = b"name: \xff\xfe\x00 x\n"
    target = url.format(study=study).replace(f"/{study}/import", "/import")
    method = "POST" if target.endswith(("/import", "/versions/file")) else "PUT"
    res = designer.request(method, target, content=bad)
    assert res.status_code == 422 and "detail" in res.json(), res.text
    for body, ctype in [
        (b'{"spec": "\xff"}', "application/json"),
        (b"\xff\xfe", "application/json"),
        (b"spec=1", "application/x-www-form-urlencoded"),
        (b"<xml/>", "text/xml"),
    ]:
        res = designer.put(f"/api/studies/{study}", content=body, headers={"Content-Type": ctype})
        # 400 when the JSON cannot be parsed, 422 when it is not a valid body.
        assert res.status_code in (400, 422), (body, ctype, res.text)
        assert "detail" in res.json()


@pytest.mark.parametrize(
    "path",
    ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/index.html%00", "/nope.js"],
)
def test_static_pages_refuse_bad_paths(path: str, client) -> None:  # type: ignore[no-untyped-def]
    res = client.get(path)
    assert res.status_code in (400, 404, 422), (path, res.status_code)
    assert "root:" not in res.text


def test_admin_only_routes_as_admin(factory) -> None:  # type: ignore[no-untyped-def]
    """The users API is fuzzed above as a designer (403); here its admin paths with bad input."""
    admin = factory.client(factory.user(Role.admin))
    for body in [
        {"email": "a@b", "password": "x" * 8, "name": "\x00"},
        {"email": "a\x00@b", "password": "x" * 8},
        {"email": "a@b", "password": "x\x00" * 8},
    ]:
        res = admin.post("/api/users", json=body)
        assert res.status_code == 422, (body, res.text)
    for user_id in ["0", str(2**31), str(2**63), str(2**70), "-1"]:
        res = admin.patch(f"/api/users/{user_id}", json={"name": "x"})
        assert res.status_code in (404, 422), (user_id, res.text)
    res = admin.patch("/api/users/1", json={"name": "\x00"})
    assert res.status_code == 422, res.text
