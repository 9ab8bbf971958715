"""The editor's helpers: YAML <-> form data, Markdown previews, validating an unsaved study,
and saved studies keeping every value the designer set (even one equal to its default)."""

from __future__ import annotations

import pytest
import yaml

from server.models import Study
from tests.factories import spec_dict

# fps 30, image quality "medium" and an empty crowd consent are the defaults: set on purpose.
SET_TO_DEFAULTS = """name: Defaults kept
environments:
  - id: cartpole
    name: CartPole
    source: {kind: gymnasium, id: CartPole-v1}
    fps: 30
    image_quality: medium
crowd:
  consent: ''
"""


def test_values_equal_to_their_defaults_survive_a_round_trip(factory, db):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    created = client.post(
        "/api/studies/import", content=SET_TO_DEFAULTS, headers={"Content-Type": "application/yaml"}
    )
    assert created.status_code == 201, created.text
    study_id = created.json()["id"]
    stored = db.get(Study, study_id).spec
    env = stored["environments"][0]
    assert env["fps"] == 30 and env["image_quality"] == "medium"
    assert "countdown_s" not in env and "mode" not in env  # never set: not stored
    assert stored["crowd"] == {"consent": ""}

    exported = yaml.safe_load(client.get(f"/api/studies/{study_id}/export").text)
    assert exported == yaml.safe_load(SET_TO_DEFAULTS)

    # The same through the JSON API: what the form saves is what the file shows.
    spec = spec_dict("Json", fps=30, mode="sync")
    saved = client.put(f"/api/studies/{study_id}", json={"spec": spec})
    assert saved.status_code == 200, saved.text
    exported = yaml.safe_load(client.get(f"/api/studies/{study_id}/export").text)
    assert exported["environments"][0] == {
        "id": "cartpole", "name": "CartPole", "fps": 30, "mode": "sync",
        "source": {"kind": "gymnasium", "id": "CartPole-v1"},
    }  # fmt: skip


def test_parse_and_render_convert_between_yaml_and_form_data(factory):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    parsed = client.post(
        "/api/studies/yaml/parse",
        content=SET_TO_DEFAULTS,
        headers={"Content-Type": "application/yaml"},
    )
    assert parsed.status_code == 200, parsed.text
    data = parsed.json()["spec"]
    assert data["environments"][0]["fps"] == 30 and "mode" not in data["environments"][0]

    rendered = client.post("/api/studies/yaml/render", json={"spec": data})
    assert rendered.status_code == 200, rendered.text
    assert rendered.json()["problems"] == []
    assert yaml.safe_load(rendered.json()["yaml"]) == yaml.safe_load(SET_TO_DEFAULTS)

    # An unfinished study is still written, its problems listed with field paths.
    data["name"] = ""
    data["environments"][0]["fps"] = 500
    unfinished = client.post("/api/studies/yaml/render", json={"spec": data})
    assert unfinished.status_code == 200, unfinished.text
    assert "fps: 500" in unfinished.json()["yaml"]
    paths = {".".join(map(str, p["loc"])) for p in unfinished.json()["problems"]}
    assert paths == {"name", "environments.0.fps"}


def test_parse_and_render_refuse_bad_input_with_a_message(factory):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    bad = client.post(
        "/api/studies/yaml/parse",
        content="name: [unclosed",
        headers={"Content-Type": "application/yaml"},
    )
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["msg"].endswith("line 1, column 7") or "line" in bad.text
    invalid = client.post(
        "/api/studies/yaml/parse", content="name: x\nenvironments: []\n",
        headers={"Content-Type": "application/yaml"},
    )  # fmt: skip
    assert invalid.status_code == 422
    assert invalid.json()["detail"][0]["loc"] == ["environments"]
    nul = client.post("/api/studies/yaml/render", json={"spec": {"name": "a\u0000b"}})
    assert nul.status_code == 422, nul.text
    deep: dict = {}
    for _ in range(40):
        deep = {"a": deep}
    too_deep = client.post("/api/studies/yaml/render", json={"spec": deep})
    assert too_deep.status_code == 422, too_deep.text
    assert factory.client().post("/api/studies/yaml/render", json={"spec": {}}).status_code == 401


def test_markdown_preview_renders_as_participants_see_it(factory):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    res = client.post(
        "/api/markdown",
        json={"text": "# Hi\n\n**bold** <script>alert(1)</script> [x](javascript:alert(1))"},
    )
    assert res.status_code == 200, res.text
    html = res.json()["html"]
    assert "<h1>Hi</h1>" in html and "<strong>bold</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html
    assert client.post("/api/markdown", json={"text": "x" * 50_001}).status_code == 422


def test_validate_an_unsaved_study(factory):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    bad = {"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {"bogus": 1}}
    res = client.post("/api/studies/validate", json={"spec": spec_dict("Unsaved", source=bad)})
    assert res.status_code == 200, res.text
    report = res.json()
    assert report["ok"] is False
    problems = report["environments"][0]["problems"]
    assert problems[0]["loc"] == ["environments", 0, "source", "kwargs", "bogus"]
    colon = {"kind": "gymnasium", "id": "os:system"}
    refused = client.post("/api/studies/validate", json={"spec": spec_dict(source=colon)})
    assert refused.status_code == 422


def test_allowed_gymnasium_ids_are_listed(factory, settings):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    res = client.get("/api/catalog/gymnasium-ids")
    assert res.status_code == 200, res.text
    ids = res.json()
    assert settings.gym_packages == ["gymnasium", "ale_py", "minigrid"]
    assert {"CartPole-v1", "ALE/Pong-v5", "MiniGrid-Empty-8x8-v0"} <= set(ids)
    assert all(":" not in i for i in ids)
    assert factory.client().get("/api/catalog/gymnasium-ids").status_code == 401


def test_the_server_builds_catalog_thumbnails_at_start(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """With ``catalog_thumbnails_at_start``, the first frames are cached in the background
    while the server serves; shutdown waits only for the entry being built."""
    import threading
    import time

    from fastapi.testclient import TestClient

    from server.main import create_app
    from server.runtime import catalog
    from server.services.studies import env_validation
    from server.services.studies.env_check import allowed_environments

    two = {k: catalog.CATALOG[k] for k in ("CartPole", "MountainCar")}
    monkeypatch.setattr(catalog, "CATALOG", two)
    app = create_app(settings.model_copy(update={"catalog_thumbnails_at_start": True}))
    allowed = allowed_environments(settings)
    with TestClient(app) as client:
        assert client.get("/api/health").status_code == 200  # served meanwhile
        deadline = time.monotonic() + 60
        paths = []
        while time.monotonic() < deadline:
            paths = [
                env_validation.frame_path(
                    settings.data_root,
                    env_validation.cache_key(env_validation.catalog_spec(e), allowed),
                )
                for e in two.values()
            ]
            if all(paths):
                break
            time.sleep(0.2)
        assert all(paths), paths
    assert not any(t.name == "catalog-thumbnails" for t in threading.enumerate())


def test_a_runtime_installed_while_the_server_runs_gets_its_thumbnails(
    settings, monkeypatch, tmp_path
):  # type: ignore[no-untyped-def]
    """The background builder looks again every ``catalog_thumbnails_poll_s``: PickCube's
    runtime, missing at start, appears (its venv put in place, as an install does) and its
    first frame is built, a picture and not a black box."""
    import time

    import simplejpeg
    from fastapi.testclient import TestClient

    from server.main import create_app
    from server.runtime import catalog, runtimes
    from server.services.studies import env_validation
    from server.services.studies.env_check import allowed_environments

    real = runtimes.RUNTIMES["robotics"].venv
    if not runtimes.state("robotics").ok:
        pytest.fail("the robotics runtime is needed: run `make runtimes`")
    monkeypatch.setattr(runtimes, "_ROOT", runtimes._ROOT)  # restored after create_app's
    monkeypatch.setattr(catalog, "CATALOG", {"PickCube": catalog.CATALOG["PickCube"]})
    root = tmp_path / "runtimes"
    root.mkdir()
    runtimes.forget()
    watching = {"catalog_thumbnails_at_start": True, "catalog_thumbnails_poll_s": 0.2}
    app = create_app(settings.model_copy(update={**watching, "runtimes_dir": root}))
    allowed = allowed_environments(settings)
    spec = env_validation.catalog_spec(catalog.CATALOG["PickCube"])
    key = env_validation.cache_key(spec, allowed)
    try:
        with TestClient(app) as client:
            assert client.get("/api/health").status_code == 200
            time.sleep(1.0)  # five passes of the builder: nothing to build
            assert env_validation.frame_path(settings.data_root, key) is None
            (root / "robotics").symlink_to(real, target_is_directory=True)  # installed
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if env_validation.frame_path(settings.data_root, key) is not None:
                    break
                time.sleep(0.2)
            path = env_validation.frame_path(settings.data_root, key)
            assert path is not None
            frame = simplejpeg.decode_jpeg(path.read_bytes()).astype(float)
            assert frame.mean() > 40 and frame.std() > 15, (frame.mean(), frame.std())
    finally:
        runtimes.forget()
