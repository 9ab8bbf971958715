"""Tasks of a study's environment through the API: a PickCube task whose setting the catalog
refuses is refused at that field (saving, and previewing), and a task's preview is its own
first frame (the cube the colour the task sets)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import simplejpeg

from server.runtime.catalog import CATALOG

pytestmark = pytest.mark.skipif(not CATALOG["PickCube"].installed(), reason="no robotics runtime")
SOURCE = {"kind": "gymnasium", "id": "RLDSStudio/PickCube-v0"}


def cube(*tasks: dict[str, Any]) -> dict[str, Any]:
    """A PickCube environment with ``tasks``."""
    return {"id": "cube", "name": "Cube", "source": SOURCE, "mode": "async", "fps": 25,
            "tasks": list(tasks)}  # fmt: skip


def task(colour: str) -> dict[str, Any]:
    return {"id": colour, "instruction": f"Pick up the {colour} cube",
            "settings": {"cube_color": colour}}  # fmt: skip


def share(frame: np.ndarray, channel: int) -> float:
    """How much of the frame is strongly of one colour channel (0 red, 2 blue)."""
    rgb = frame.astype(int)
    others = [c for c in range(3) if c != channel]
    strong = (rgb[..., channel] > 120) & (rgb[..., channel] > rgb[..., others].max(axis=-1) + 60)
    return float(strong.mean())


def test_a_task_setting_the_catalog_refuses_is_refused_at_its_field(factory):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    spec = {"name": "Colours", "environments": [cube(task("red"), task("purple"))]}
    res = client.post("/api/studies", json={"spec": spec})
    assert res.status_code == 422, res.text
    (item,) = res.json()["detail"]
    assert item["loc"] == ["spec", "environments", 0, "tasks", 1, "settings", "cube_color"]
    assert "purple" in item["msg"] and '"blue"' in item["msg"]

    # the preview refuses it the same way, at the environment's place in the editor's study
    body = {"environment": cube(task("red"), task("purple")), "task": "purple", "index": 3}
    res = client.post("/api/studies/tasks/preview", json=body)
    assert res.status_code == 422, res.text
    (item,) = res.json()["detail"]
    assert item["loc"] == ["spec", "environments", 3, "tasks", 1, "settings", "cube_color"]
    # an unknown task, a malformed body: 422 with the field, never a 500
    res = client.post("/api/studies/tasks/preview", json={**body, "task": "green"})
    assert res.status_code == 422 and res.json()["detail"][0]["loc"] == ["task"]
    res = client.post("/api/studies/tasks/preview", json={**body, "index": -1})
    assert res.status_code == 422 and res.json()["detail"][0]["loc"] == ["body", "index"]


def test_a_task_preview_shows_that_task_first_frame(factory):  # type: ignore[no-untyped-def]
    client = factory.client(factory.user())
    env = cube(task("red"), {**task("blue"), "seeds": [7]})
    frames = {}
    for colour in ("red", "blue"):
        res = client.post("/api/studies/tasks/preview", json={"environment": env, "task": colour})
        assert res.status_code == 200, res.text
        out = res.json()
        assert out["ok"] is True and out["problems"] == [], out
        image = client.get(out["frame_url"])
        assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
        frames[colour] = simplejpeg.decode_jpeg(image.content)
    red, blue = frames["red"], frames["blue"]
    assert share(red, 0) > 0.002 and share(red, 2) < share(red, 0) / 5
    assert share(blue, 2) > 0.002 and share(blue, 0) < share(blue, 2) / 5

    # asked again: from the validation cache, no worker started
    res = client.post("/api/studies/tasks/preview", json={"environment": env, "task": "blue"})
    assert res.json()["cached"] is True

    # a server that does not allow the environment refuses it, as Validate does
    other = {"environment": {**env, "source": {"kind": "gymnasium", "id": "os:system"}},
             "task": "red"}  # fmt: skip
    res = client.post("/api/studies/tasks/preview", json=other)
    assert res.status_code == 422, res.text
    assert res.json()["detail"][0]["loc"][:4] == ["spec", "environments", 0, "source"]
