"""The study editor's API: the catalog, its thumbnails, and Validate (cached by env spec)."""

from __future__ import annotations

import pytest

from server.runtime.catalog import CATALOG
from server.runtime.probe import STARTS
from tests.factories import spec_dict


@pytest.fixture
def owner(factory):
    return factory.user()


@pytest.fixture
def client(factory, owner):
    return factory.client(owner)


def _validate(client, study_id: int):
    res = client.post(f"/api/studies/{study_id}/validate")
    assert res.status_code == 200, res.text
    return res.json()


def test_catalog_lists_what_the_operator_allows(client):
    res = client.get("/api/catalog")
    assert res.status_code == 200
    entries = {e["key"]: e for e in res.json()}
    assert set(entries) == set(CATALOG)
    pong = entries["Pong"]
    assert pong["suite"] == "atari" and pong["action_type"] == "discrete"
    assert pong["source"] == {"kind": "gymnasium", "id": "ALE/Pong-v5", "kwargs": {}}
    assert pong["mode"] == "async" and pong["fps"] == 15 and pong["installed"] is True
    assert pong["controls"]["keys"]["ArrowUp"] == "RIGHT"
    assert pong["settings_schema"]["properties"]["frameskip"]["maximum"] == 16
    assert pong["thumbnail_url"] == "/api/catalog/Pong/thumbnail.jpg"
    assert entries["Crafter"]["installed"] is False and entries["Crafter"]["thumbnail_url"] is None
    assert pong["pace"] is None  # real time
    cartpole = entries["CartPole"]
    assert cartpole["fps"] == 20 and "before a person can react" in cartpole["pace"]


def test_catalog_needs_a_login(factory):
    assert factory.client().get("/api/catalog").status_code == 401


def test_catalog_thumbnail_is_a_first_frame_built_once(client):
    res = client.get("/api/catalog/CartPole/thumbnail.jpg")
    assert res.status_code == 200 and res.headers["content-type"] == "image/jpeg"
    assert res.content[:2] == b"\xff\xd8"
    before = STARTS.starts
    again = client.get("/api/catalog/CartPole/thumbnail.jpg")
    assert again.content == res.content and STARTS.starts == before  # from the cache
    assert client.get("/api/catalog/Crafter/thumbnail.jpg").status_code == 404  # not installed
    assert client.get("/api/catalog/NoSuch/thumbnail.jpg").status_code == 404


def test_validate_shows_spaces_frame_speed_and_is_cached(factory, owner, client):
    study = factory.study(owner, spec_dict(mode="async", fps=15))
    first = _validate(client, study.id)
    assert first["ok"] is True
    (env,) = first["environments"]
    assert env["cached"] is False and env["problems"] == []
    assert env["observation_space"]["shape"] == [4] and env["observation_space"]["dtype"]
    assert env["action_space"] == {"shape": [], "dtype": "int64", "num_values": 2}
    assert env["speed"]["native_fps"] == 50 and env["speed"]["effective"] == pytest.approx(0.3)
    (warning,) = env["warnings"]
    assert warning["loc"] == ["environments", 0, "fps"]
    assert "0.30× real speed" in warning["msg"] and "set fps to 50" in warning["msg"]
    assert env["controls"]["bindings"]["ArrowLeft"] == 0
    # the catalog's controls, for the controls editor's defaults and reset
    assert env["default_controls"]["keys"] == {"ArrowLeft": 0, "ArrowRight": 1}
    assert env["default_controls"]["noop"] == 0
    frame = client.get(env["frame_url"])
    assert frame.status_code == 200 and frame.content[:2] == b"\xff\xd8"

    before = STARTS.starts
    second = _validate(client, study.id)
    assert STARTS.starts == before  # no worker started: served from the cache
    assert second["environments"][0]["cached"] is True
    assert {**second["environments"][0], "cached": False} == env

    # a changed spec builds again, and real speed has no warning
    res = client.put(f"/api/studies/{study.id}", json={"spec": spec_dict(mode="async", fps=50)})
    assert res.status_code == 200
    third = _validate(client, study.id)
    assert STARTS.starts == before + 1
    assert third["environments"][0]["warnings"] == []

    # the catalog's playable default (slowed on purpose) says why instead of warning
    res = client.put(f"/api/studies/{study.id}", json={"spec": spec_dict(mode="async", fps=20)})
    assert res.status_code == 200
    (slowed,) = _validate(client, study.id)["environments"]
    assert slowed["warnings"] == [] and slowed["speed"]["effective"] == pytest.approx(0.4)
    assert "0.4× real time on purpose" in slowed["speed"]["note"]


def test_validate_lists_problems_with_field_paths(factory, owner, client):
    spec = spec_dict(source={"kind": "gymnasium", "id": "Taxi-v4", "kwargs": {"bogus": 1}})
    study = factory.study(owner, spec)
    result = _validate(client, study.id)
    assert result["ok"] is False
    (env,) = result["environments"]
    assert env["frame_url"] is None and env["cached"] is False
    problem = env["problems"][0]
    assert problem["loc"] == ["environments", 0, "source", "kwargs", "bogus"]
    assert "bogus" in problem["msg"]
    assert ["environments", 0, "controls"] in [p["loc"] for p in env["problems"]]
    assert env["default_controls"]["keys"] == {}  # Taxi is not in the catalog
    # activation runs the same check
    res = client.post(
        f"/api/studies/{study.id}/state", json={"state": "active", "acknowledge_warnings": True}
    )
    assert res.status_code == 422
    assert res.json()["detail"][0]["loc"] == [
        "spec",
        "environments",
        0,
        "source",
        "kwargs",
        "bogus",
    ]


def test_activation_reuses_the_validation_cache(factory, owner, client):
    study = factory.study(owner, spec_dict(mode="async", fps=50))
    assert _validate(client, study.id)["ok"] is True
    before = STARTS.starts
    res = client.post(
        f"/api/studies/{study.id}/state", json={"state": "active", "acknowledge_warnings": True}
    )
    assert res.status_code == 200 and STARTS.starts == before


def test_validation_frames_refuse_bad_names(client):
    assert client.get("/api/validation/frames/" + "0" * 64 + ".jpg").status_code == 404
    assert client.get("/api/validation/frames/..%2f..%2fsecret.jpg").status_code in (404, 422)


def test_validate_someone_elses_study_is_not_found(factory, owner):
    study = factory.study(owner)
    other = factory.client(factory.user())
    assert other.post(f"/api/studies/{study.id}/validate").status_code == 404
