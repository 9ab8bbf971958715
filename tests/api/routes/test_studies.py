"""Studies API: every endpoint under an authorization matrix, lifecycle and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.models import Role, Study, StudyState
from tests.factories import spec_dict

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

ROLES = ["anonymous", "owner", "other", "admin"]
# Who may manage a study: its owner and admins. Others get 404 (no existence leak),
# anonymous callers 401.
EXPECTED = {"anonymous": 401, "owner": 200, "other": 404, "admin": 200}


@pytest.fixture
def world(factory):
    owner = factory.user(Role.designer)
    other = factory.user(Role.designer)
    admin = factory.user(Role.admin)
    study = factory.study(owner)
    clients = {
        "anonymous": factory.client(),
        "owner": factory.client(owner),
        "other": factory.client(other),
        "admin": factory.client(admin),
    }
    return {"study": study, "clients": clients, "owner": owner, "other": other}


def _ok(status: int, expected: int) -> bool:
    return status == expected if expected != 200 else 200 <= status < 300


@pytest.mark.parametrize("role", ROLES)
def test_read(world, role):
    res = world["clients"][role].get(f"/api/studies/{world['study'].id}")
    assert _ok(res.status_code, EXPECTED[role]), res.text
    if res.status_code == 200:
        assert res.json()["spec"]["environments"][0]["id"] == "cartpole"


@pytest.mark.parametrize("role", ROLES)
def test_update(world, role):
    body = {"spec": spec_dict(name="Renamed")}
    res = world["clients"][role].put(f"/api/studies/{world['study'].id}", json=body)
    assert _ok(res.status_code, EXPECTED[role]), res.text
    if res.status_code == 200:
        assert res.json()["name"] == "Renamed"


@pytest.mark.parametrize("role", ROLES)
def test_delete_draft(world, role, db):
    study_id = world["study"].id
    res = world["clients"][role].delete(f"/api/studies/{study_id}")
    assert _ok(res.status_code, EXPECTED[role]), res.text
    db.expire_all()
    assert (db.get(Study, study_id) is None) == (res.status_code == 204)


@pytest.mark.parametrize("role", ROLES)
def test_state_change(world, role):
    res = world["clients"][role].post(
        f"/api/studies/{world['study'].id}/state",
        json={"state": "active", "acknowledge_warnings": True},
    )
    assert _ok(res.status_code, EXPECTED[role]), res.text
    if res.status_code == 200:
        assert res.json()["state"] == "active"
        assert res.json()["permalink_token"]


@pytest.mark.parametrize("role", ROLES)
def test_export_yaml(world, role):
    res = world["clients"][role].get(f"/api/studies/{world['study'].id}/export")
    assert _ok(res.status_code, EXPECTED[role]), res.text
    if res.status_code == 200:
        assert res.headers["content-type"].startswith("application/yaml")
        assert "CartPole-v1" in res.text


@pytest.mark.parametrize("role", ROLES)
def test_rotate_permalink(world, role, factory, db):
    study = world["study"]
    study.state = StudyState.active
    study.permalink_token = "old-token"
    db.commit()
    res = world["clients"][role].post(f"/api/studies/{study.id}/permalink")
    assert _ok(res.status_code, EXPECTED[role]), res.text
    db.refresh(study)
    assert (study.permalink_token != "old-token") == (res.status_code == 200)


@pytest.mark.parametrize("role", ROLES)
def test_list_shows_own_studies_or_all_for_admin(world, role, factory):
    factory.study(world["other"], spec_dict(name="Other's study"))
    res = world["clients"][role].get("/api/studies")
    if role == "anonymous":
        assert res.status_code == 401
        return
    names = {s["name"] for s in res.json()}
    expected = {
        "owner": {"A study"},
        "other": {"Other's study"},
        "admin": {"A study", "Other's study"},
    }
    assert names == expected[role]


@pytest.mark.parametrize("role", ROLES)
def test_create_and_import(world, role):
    client = world["clients"][role]
    created = client.post("/api/studies", json={"spec": spec_dict(name="New")})
    imported = client.post(
        "/api/studies/import",
        content="name: Imported\nenvironments:\n  - id: cp\n    name: CP\n"
        "    source: {kind: gymnasium, id: CartPole-v1}\n",
        headers={"Content-Type": "application/yaml"},
    )
    if role == "anonymous":
        assert created.status_code == imported.status_code == 401
    else:
        assert created.status_code == imported.status_code == 201
        assert created.json()["state"] == imported.json()["state"] == "draft"
        assert imported.json()["environments"][0]["env_key"] == "cp"


def test_unknown_study_is_404(factory):
    client = factory.client(factory.user())
    assert client.get("/api/studies/999999").status_code == 404
    assert client.get("/api/studies/999999").json() == {"detail": "No such study."}


def test_list_filters_by_state(factory, db):
    owner = factory.user()
    draft, active = factory.study(owner), factory.study(owner, spec_dict(name="B"))
    active.state = StudyState.active
    db.commit()
    client = factory.client(owner)
    assert [s["id"] for s in client.get("/api/studies?state=active").json()] == [active.id]
    assert [s["id"] for s in client.get("/api/studies?state=draft").json()] == [draft.id]
    assert client.get("/api/studies?state=bogus").status_code == 422


# --- lifecycle ----------------------------------------------------------------------------
LEGAL = {
    ("draft", "active"),
    ("active", "paused"),
    ("paused", "active"),
    ("active", "closed"),
    ("paused", "closed"),
}


@pytest.mark.parametrize("source", [s.value for s in StudyState])
@pytest.mark.parametrize("target", [s.value for s in StudyState])
def test_transitions(factory, db, source, target):
    owner = factory.user()
    study = factory.study(owner)
    study.state = source
    db.commit()
    res = factory.client(owner).post(
        f"/api/studies/{study.id}/state", json={"state": target, "acknowledge_warnings": True}
    )
    if (source, target) in LEGAL:
        assert res.status_code == 200, res.text
        assert res.json()["state"] == target
    else:
        assert res.status_code == 409, res.text
        assert "cannot become" in res.json()["detail"]
        db.refresh(study)
        assert study.state == source


def test_permalink_is_created_once_and_kept_across_pause(factory):
    owner = factory.user()
    study = factory.study(owner)
    client = factory.client(owner)
    token = client.post(
        f"/api/studies/{study.id}/state", json={"state": "active", "acknowledge_warnings": True}
    ).json()["permalink_token"]
    client.post(f"/api/studies/{study.id}/state", json={"state": "paused"})
    again = client.post(
        f"/api/studies/{study.id}/state", json={"state": "active", "acknowledge_warnings": True}
    ).json()
    assert token and again["permalink_token"] == token
    rotated = client.post(f"/api/studies/{study.id}/permalink").json()["permalink_token"]
    assert rotated and rotated != token


def test_rotating_before_activation_is_refused(factory):
    owner = factory.user()
    study = factory.study(owner)
    res = factory.client(owner).post(f"/api/studies/{study.id}/permalink")
    assert res.status_code == 409


@pytest.mark.parametrize("state", ["active", "paused", "closed"])
def test_only_drafts_can_be_deleted(factory, db, state):
    owner = factory.user()
    study = factory.study(owner)
    study.state = state
    db.commit()
    res = factory.client(owner).delete(f"/api/studies/{study.id}")
    assert res.status_code == 409
    assert "Only draft" in res.json()["detail"]


@pytest.mark.parametrize("state,code", [("active", 409), ("closed", 409), ("paused", 200)])
def test_editing_depends_on_state(factory, db, state, code):
    owner = factory.user()
    study = factory.study(owner)
    study.state = state
    db.commit()
    res = factory.client(owner).put(
        f"/api/studies/{study.id}", json={"spec": spec_dict(name="Edited")}
    )
    assert res.status_code == code, res.text


def test_paused_study_keeps_its_environments(factory, db):
    owner = factory.user()
    study = factory.study(owner)
    study.state = StudyState.paused
    db.commit()
    body = {"spec": spec_dict(id="another")}
    res = factory.client(owner).put(f"/api/studies/{study.id}", json=body)
    assert res.status_code == 409
    assert "cannot be removed" in res.json()["detail"]


def test_activation_refuses_environments_that_do_not_run_here(factory):
    owner = factory.user()
    spec = spec_dict(source={"kind": "gymnasium", "id": "NoSuchEnv-v0"})
    study = factory.study(owner, spec)
    res = factory.client(owner).post(
        f"/api/studies/{study.id}/state", json={"state": "active", "acknowledge_warnings": True}
    )
    assert res.status_code == 422
    detail = res.json()["detail"]
    assert detail[0]["loc"] == ["spec", "environments", 0, "source", "id"]
    assert "NoSuchEnv-v0" in detail[0]["msg"]


# --- bad input ----------------------------------------------------------------------------
def test_invalid_spec_names_the_field(factory):
    client = factory.client(factory.user())
    bad = spec_dict(fps=0)
    res = client.post("/api/studies", json={"spec": bad})
    assert res.status_code == 422
    locs = [err["loc"] for err in res.json()["detail"]]
    assert ["body", "spec", "environments", 0, "fps"] in locs


def test_unknown_fields_are_refused(factory):
    client = factory.client(factory.user())
    res = client.post("/api/studies", json={"spec": {**spec_dict(), "colour": "red"}})
    assert res.status_code == 422
    assert ["body", "spec", "colour"] in [err["loc"] for err in res.json()["detail"]]


def test_duplicate_environment_ids_are_refused(factory):
    client = factory.client(factory.user())
    spec = spec_dict()
    spec["environments"] = spec["environments"] * 2
    res = client.post("/api/studies", json={"spec": spec})
    assert res.status_code == 422
    assert "used twice" in res.text


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("name: [unclosed", "line 1"),
        ("- just\n- a list\n", "mapping"),
        ("name: x\nenvironments: []\n", "environments"),
        (
            "name: x\nenvironments:\n  - id: BAD ID\n    name: n\n"
            "    source: {kind: gymnasium, id: CartPole-v1}\n",
            "environments.0.id",
        ),
        (
            "name: x\nenvironments:\n  - id: a\n    name: n\n"
            "    source: {kind: dm_env, factory: not-a-path}\n",
            "environments.0.source.dm_env.factory",
        ),
    ],
)
def test_invalid_yaml_gives_a_readable_422(factory, text, fragment):
    client = factory.client(factory.user())
    res = client.post(
        "/api/studies/import", content=text, headers={"Content-Type": "application/yaml"}
    )
    assert res.status_code == 422
    detail = res.json()["detail"]
    joined = [".".join(str(p) for p in err["loc"]) + " " + err["msg"] for err in detail]
    assert any(fragment in line for line in joined), joined
    assert "Traceback" not in res.text


def test_non_utf8_yaml_is_refused(factory):
    client = factory.client(factory.user())
    res = client.post(
        "/api/studies/import", content=b"\xff\xfe\x00", headers={"Content-Type": "application/yaml"}
    )
    assert res.status_code == 422


def test_malformed_json_body(factory):
    client = factory.client(factory.user())
    res = client.post(
        "/api/studies", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert res.status_code == 422


def test_oversized_body_is_413(factory, settings):
    client = factory.client(factory.user())
    big = "#" * (settings.max_body_bytes + 1)
    res = client.post(
        "/api/studies/import", content=big, headers={"Content-Type": "application/yaml"}
    )
    assert res.status_code == 413
    assert "too large" in res.json()["detail"]


def test_oversized_streamed_body_is_413(factory, settings):
    client = factory.client(factory.user())

    def chunks():
        for _ in range(settings.max_body_bytes // 1024 + 2):
            yield b"#" * 1024

    res = client.post(
        "/api/studies/import", content=chunks(), headers={"Content-Type": "application/yaml"}
    )
    assert res.status_code == 413


def test_writes_need_the_csrf_header(factory):
    owner = factory.user()
    client = factory.client(owner)
    token = client.headers.pop("X-CSRF-Token")
    res = client.post("/api/studies", json={"spec": spec_dict()})
    assert res.status_code == 403
    assert "CSRF" in res.json()["detail"]
    client.headers["X-CSRF-Token"] = token + "x"
    assert client.post("/api/studies", json={"spec": spec_dict()}).status_code == 403
    client.headers["X-CSRF-Token"] = token
    assert client.post("/api/studies", json={"spec": spec_dict()}).status_code == 201


def test_non_integer_id_is_422_not_500(factory):
    client = factory.client(factory.user())
    assert client.get("/api/studies/abc").status_code == 422


@pytest.mark.parametrize("role", ROLES)
def test_replace_from_study_file(world, role):
    text = (
        "name: From file\nenvironments:\n  - id: cartpole\n    name: CP\n"
        "    source: {kind: gymnasium, id: CartPole-v1}\n"
    )
    res = world["clients"][role].put(
        f"/api/studies/{world['study'].id}/file",
        content=text,
        headers={"Content-Type": "application/yaml"},
    )
    assert _ok(res.status_code, EXPECTED[role]), res.text
    if res.status_code == 200:
        assert res.json()["name"] == "From file"


def test_replace_from_study_file_validates_and_respects_state(factory, db):
    owner = factory.user()
    study = factory.study(owner)
    client = factory.client(owner)
    url = f"/api/studies/{study.id}/file"
    headers = {"Content-Type": "application/yaml"}
    bad = client.put(url, content="name: [unclosed", headers=headers)
    assert bad.status_code == 422 and "line 1" in bad.text
    study.state = StudyState.active
    db.commit()
    text = client.get(f"/api/studies/{study.id}/export").text
    assert client.put(url, content=text, headers=headers).status_code == 409


# --- found by tests/test_api_fuzz.py --------------------------------------------------------
def test_delete_draft_with_test_plays_removes_them(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    """A designer may test-play a draft: deleting it used to fail (500) on its episodes."""
    from server.models import Episode
    from tests.api.routes.recorded import Inserter

    owner = factory.user()
    study = factory.study(owner)
    episode = Inserter(db, settings.data_root).add(study, recorded["cartpole"][0], user=owner)
    log, episode_id = Path(episode.storage_path), episode.id
    assert log.exists()
    res = factory.client(owner).delete(f"/api/studies/{study.id}")
    assert res.status_code == 204, res.text
    db.expunge_all()
    assert db.get(Episode, episode_id) is None
    assert not log.exists()


@pytest.mark.parametrize("study_id", [0, 2**31, 2**63, 2**70])
def test_out_of_range_study_id_is_422(study_id: int, factory) -> None:  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    res = client.get(f"/api/studies/{study_id}")
    assert res.status_code == 422, res.text
    assert res.json()["detail"][0]["loc"] == ["path", "study_id"]


@pytest.mark.parametrize(
    "spec",
    [
        spec_dict("nul\x00name"),
        spec_dict(source={"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {"k\x00": 1}}),
        spec_dict(source={"kind": "dm_env", "factory": "a" * 300 + ":load"}),
        spec_dict(seeds=[2**31]),
        spec_dict(seeds=[-1]),
    ],
)
def test_spec_values_the_database_cannot_hold_are_422(spec, factory) -> None:  # type: ignore[no-untyped-def]
    """NUL characters, a factory longer than its column, seeds outside INTEGER: 422, not 500."""
    res = factory.client(factory.user()).post("/api/studies", json={"spec": spec})
    assert res.status_code == 422, res.text


def test_nul_in_a_study_file_is_422(factory) -> None:  # type: ignore[no-untyped-def]
    text = 'name: "bad\\0name"\nenvironments:\n  - {id: a, name: A, source: {id: CartPole-v1}}\n'
    res = factory.client(factory.user()).post("/api/studies/import", content=text)
    assert res.status_code == 422, res.text
