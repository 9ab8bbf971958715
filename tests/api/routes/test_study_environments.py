"""Designers choose only environments the operator allows; kwargs and controls are checked.

Through the HTTP API (and the play socket): create, import, update and activation refuse
what is not allowed, with the field path; nothing a designer names is imported in the app.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from server.main import create_app
from server.models import Study, StudyState
from tests.factories import Factory, spec_dict
from tests.player.conftest import Player
from tests.runtime.conftest import install_plugin

CANARY = "tests.runtime._canary"
SUBPROCESS = {"kind": "dm_env", "factory": "subprocess:call"}


def _activate(client, study_id: int):
    return client.post(
        f"/api/studies/{study_id}/state", json={"state": "active", "acknowledge_warnings": True}
    )


def _locs(res) -> list[list[Any]]:
    return [item["loc"] for item in res.json()["detail"]]


def _stored(factory: Factory, db, owner, source: dict[str, Any], **env: Any) -> Study:
    """A draft holding ``source`` as if written before the allow-list (straight in the DB)."""
    study = factory.study(owner)
    spec = spec_dict(source=source, **env)
    study.spec = spec
    db.commit()
    return study


@pytest.fixture
def owner(factory):
    return factory.user()


@pytest.fixture
def client(factory, owner):
    return factory.client(owner)


def test_subprocess_factory_is_refused_on_create_import_and_update(
    client, owner, factory, tmp_path
):
    marker = tmp_path / "ran"
    source = {**SUBPROCESS, "kwargs": {"args": f"touch {marker}", "shell": True}}
    res = client.post("/api/studies", json={"spec": spec_dict(source=source)})
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", "factory"]]
    assert "'subprocess:call' is not allowed" in res.json()["detail"][0]["msg"]

    text = (
        "name: S\nenvironments:\n  - id: a\n    name: A\n    controls: {keys: {KeyA: 0}}\n"
        "    source: {kind: dm_env, factory: 'subprocess:call', kwargs: {args: x, shell: true}}\n"
    )
    res = client.post("/api/studies/import", content=text)
    assert res.status_code == 422, res.text
    assert _locs(res) == [["environments", 0, "source", "factory"]]

    study = factory.study(owner)
    res = client.put(f"/api/studies/{study.id}", json={"spec": spec_dict(source=source)})
    assert res.status_code == 422, res.text
    res = client.put(f"/api/studies/{study.id}/file", content=text)
    assert res.status_code == 422, res.text
    assert not marker.exists()


def test_stored_subprocess_study_can_neither_activate_nor_run(client, owner, factory, db, tmp_path):
    marker = tmp_path / "ran"
    source = {**SUBPROCESS, "kwargs": {"args": ["touch", str(marker)]}}
    study = _stored(factory, db, owner, source, controls={"keys": {"KeyA": 0}})
    res = _activate(client, study.id)
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", "factory"]]
    # A designer test-plays the draft: the worker refuses to build it.
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="cartpole")
        error = player.until("error")
    assert error["code"] == "env_failed" and "not allowed" in error["message"]
    assert not marker.exists()


@pytest.mark.parametrize(
    "source, field",
    [
        ({"kind": "gymnasium", "id": f"{CANARY}:make"}, "id"),
        ({"kind": "dm_env", "factory": f"{CANARY}:make"}, "factory"),
    ],
)
def test_designer_named_modules_are_never_imported(client, owner, factory, db, source, field):
    assert CANARY not in sys.modules
    res = client.post("/api/studies", json={"spec": spec_dict(source=source)})
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", field]]
    study = _stored(factory, db, owner, source, controls={"keys": {"KeyA": 0}})
    res = _activate(client, study.id)
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", field]]
    assert CANARY not in sys.modules


def test_settings_listed_factory_is_allowed_and_others_not(client, factory, settings, tmp_path):
    source = {"kind": "dm_env", "factory": "tests.runtime.fake_envs:counter"}
    body = {"spec": spec_dict(source=source, controls={"keys": {"KeyA": 1, "KeyB": 2}, "noop": 0})}
    res = client.post("/api/studies", json=body)
    assert res.status_code == 201, res.text
    assert _activate(client, res.json()["id"]).status_code == 200

    # The same study on a server whose operator lists no factory.
    strict = settings.model_copy(update={"dm_env_factories": [], "data_root": tmp_path / "d"})
    strict_factory = Factory(factory.db, create_app(strict))
    try:
        other = strict_factory.client(factory.user())
        res = other.post("/api/studies", json=body)
        assert res.status_code == 422, res.text
        assert _locs(res) == [["spec", "environments", 0, "source", "factory"]]
    finally:
        strict_factory.close()


def test_entry_point_factory_is_allowed(client, tmp_path: Path, monkeypatch):
    source = {"kind": "dm_env", "factory": "tests.runtime.fake_envs:plugged"}
    body = {"spec": spec_dict(source=source, controls={"keys": {"KeyA": 1, "KeyB": 2, "KeyC": 0}})}
    assert client.post("/api/studies", json=body).status_code == 422  # not installed yet
    install_plugin(tmp_path / "site", monkeypatch, lab_counter=source["factory"])
    res = client.post("/api/studies", json=body)
    assert res.status_code == 201, res.text
    assert _activate(client, res.json()["id"]).status_code == 200


def test_unknown_settings_are_refused_at_activation(client):
    taxi = {"kind": "gymnasium", "id": "Taxi-v4", "kwargs": {"bogus_option": 1}}
    res = client.post(
        "/api/studies", json={"spec": spec_dict(source=taxi, controls={"keys": {"KeyA": 0}})}
    )
    assert res.status_code == 201, res.text  # an allowed id; kwargs are data
    res = _activate(client, res.json()["id"])
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", "kwargs", "bogus_option"]]
    assert "bogus_option" in res.json()["detail"][0]["msg"]


def test_a_catalog_setting_outside_its_schema_is_refused_at_save(client):
    """The catalog knows CartPole's and Breakout's settings: save refuses, naming the range."""
    cartpole = {"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {"bogus_option": 1}}
    res = client.post("/api/studies", json={"spec": spec_dict(source=cartpole)})
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", "kwargs", "bogus_option"]]

    breakout = {"kind": "gymnasium", "id": "ALE/Breakout-v5", "kwargs": {"frameskip": 20}}
    res = client.post("/api/studies", json={"spec": spec_dict(source=breakout)})
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "source", "kwargs", "frameskip"]]
    assert "from 1 to 16" in res.json()["detail"][0]["msg"]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [9, 500, 20_000])
def test_deep_kwargs_are_422(client, depth):
    body = (
        '{"spec": {"name": "a", "environments": [{"id": "a", "name": "A", "source": '
        f'{{"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {{"x": {_nested(depth)}}}}}}}]}}}}'
    )
    res = client.post("/api/studies", content=body, headers={"content-type": "application/json"})
    assert res.status_code == 422, res.text
    assert res.json()["message"]
    if depth <= 500:  # parsed: the spec model refuses it by field
        (item,) = res.json()["detail"]
        assert item["loc"] == ["body", "spec", "environments", 0, "source", "gymnasium", "kwargs"]
        assert "nested deeper than 8 levels" in item["msg"]


def test_large_or_non_json_kwargs_are_422(client):
    big = {"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {"x": "a" * 17_000}}
    res = client.post("/api/studies", json={"spec": spec_dict(source=big)})
    assert res.status_code == 422 and "longer than 16384 bytes" in res.text
    for kwargs, problem in [("{when: 2024-01-01}", "date is not a JSON value"),
                            ("{n: .nan}", "numbers must be finite")]:  # fmt: skip
        text = (
            "name: S\nenvironments:\n  - id: a\n    name: A\n"
            f"    source: {{kind: gymnasium, id: CartPole-v1, kwargs: {kwargs}}}\n"
        )
        res = client.post("/api/studies/import", content=text)
        assert res.status_code == 422 and problem in res.text, res.text


def test_controls_bound_to_missing_actions_are_refused(client):
    controls = {"keys": {"ArrowLeft": 99, "ArrowRight": 1, "KeyX": "FIRE"},
                "buttons": {3: -1}, "noop": 2}  # fmt: skip
    res = client.post("/api/studies", json={"spec": spec_dict(controls=controls)})
    assert res.status_code == 201, res.text
    res = _activate(client, res.json()["id"])
    assert res.status_code == 422, res.text
    base = ["spec", "environments", 0, "controls"]
    assert sorted(map(str, _locs(res))) == sorted(
        str([*base, *loc]) for loc in (["keys", "ArrowLeft"], ["keys", "KeyX"],
                                       ["buttons", 3], ["noop"])
    )  # fmt: skip
    messages = {item["loc"][-1]: item["msg"] for item in res.json()["detail"]}
    assert messages["ArrowLeft"] == (
        "control 'ArrowLeft': 99 is not an action of this environment: use 0..1"
    )


def test_atari_action_names_the_game_lacks_are_refused(client):
    breakout = {"kind": "gymnasium", "id": "ALE/Breakout-v5"}
    controls = {"keys": {"Space": "FIRE", "ArrowUp": "UP", "ArrowLeft": "LEFT"}, "noop": "NOOP"}
    res = client.post("/api/studies", json={"spec": spec_dict(source=breakout, controls=controls)})
    res = _activate(client, res.json()["id"])
    assert res.status_code == 422, res.text
    assert _locs(res) == [
        ["spec", "environments", 0, "controls", "keys", "ArrowUp"],
        ["spec", "environments", 0, "controls"],  # RIGHT is reached by nothing
    ]
    assert "'UP' is not an action" in res.json()["detail"][0]["msg"]


def test_sample_studies_still_activate(client, factory, owner):
    for file in sorted(p.name for p in (Path(__file__).parents[3] / "studies").glob("*.yaml")):
        study = factory.sample_study(owner, file)
        res = _activate(client, study.id)
        assert res.status_code == 200, (file, res.text)
        assert res.json()["state"] == StudyState.active


def test_an_unbound_action_blocks_activation_until_marked_not_for_players(client):
    cartpole = {"kind": "gymnasium", "id": "CartPole-v1"}
    only_left = {"keys": {"ArrowLeft": 0}}
    res = client.post("/api/studies", json={"spec": spec_dict(source=cartpole, controls=only_left)})
    assert res.status_code == 201, res.text
    study_id = res.json()["id"]
    res = _activate(client, study_id)
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "controls"]]
    (item,) = res.json()["detail"]
    assert item["msg"] == "Action 1 has no key or button: bind one, or tick “not for players” on it"
    assert (item["level"], item["code"], item["label"]) == ("error", "unbound_action", "Controls")

    marked = {**only_left, "not_for_players": [1]}
    spec = spec_dict(source=cartpole, controls=marked)
    assert client.put(f"/api/studies/{study_id}", json={"spec": spec}).status_code == 200
    assert _activate(client, study_id).status_code == 200
    stored = client.get(f"/api/studies/{study_id}").json()["spec"]["environments"][0]
    assert stored["controls"]["not_for_players"] == [1]


def test_a_policy_not_installed_blocks_activation_with_its_path(client, factory, owner):
    study = factory.study(owner, spec_dict(policy={"id": "no-such-policy"}))
    res = _activate(client, study.id)
    assert res.status_code == 422, res.text
    assert _locs(res) == [["spec", "environments", 0, "policy", "id"]]
    assert "'no-such-policy' is not installed" in res.json()["detail"][0]["msg"]
    assert db_state(factory, study) == StudyState.draft


def db_state(factory: Factory, study: Study) -> str:
    factory.db.refresh(study)
    return study.state
