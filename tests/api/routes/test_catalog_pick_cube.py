"""Our PickCube in the editor's catalog: listed with a first frame, validated with its 7-D
action and both cameras, and a study using it activates."""

from __future__ import annotations

import pytest
import simplejpeg

from server.runtime.catalog import CATALOG
from tests.conftest import ROOT
from tests.factories import spec_dict

ENTRY = CATALOG["PickCube"]
SAMPLE = ROOT / "studies" / "pick-cube.yaml"
pytestmark = pytest.mark.skipif(not ENTRY.installed(), reason="no robotics runtime")


def not_black(jpeg: bytes) -> None:
    """A first frame that shows a scene: bright enough, and more than one colour."""
    frame = simplejpeg.decode_jpeg(jpeg).astype(float)
    assert frame.mean() > 40, frame.mean()
    assert frame.std() > 15, frame.std()


def test_pick_cube_is_offered_validated_and_activates(factory):
    owner = factory.user()
    client = factory.client(owner)
    (entry,) = [e for e in client.get("/api/catalog").json() if e["key"] == "PickCube"]
    assert entry["installed"] is True and entry["action_type"] == "continuous"
    assert entry["source"] == {"kind": "gymnasium", "id": "RLDSStudio/PickCube-v0", "kwargs": {}}
    # keys, and the mouse's, a phone's and touch's (one gripper latch)
    controls = entry["controls"]
    assert controls["toggle"] == ["Space", "MouseRight", "PhoneGrip", "TouchA"]
    assert len(controls["keys"]) == 16
    sources = {a.get("source", "gamepad") for a in controls["axes"]}
    assert sources == {"gamepad", "mouse", "phone", "touch"}
    thumbnail = client.get(entry["thumbnail_url"])  # the first frame, from the front camera
    assert thumbnail.status_code == 200
    assert simplejpeg.decode_jpeg(thumbnail.content).shape == (256, 256, 3)
    not_black(thumbnail.content)
    assert entry["runtime"]["name"] == "robotics"

    env = {"id": "cube", "name": "Cube", "source": entry["source"], "mode": "async", "fps": 25}
    study = factory.study(owner, spec_dict(**env))
    res = client.post(f"/api/studies/{study.id}/validate")
    assert res.status_code == 200, res.text
    (report,) = res.json()["environments"]
    assert report["problems"] == [] and report["warnings"] == []  # 25 fps is its real pace
    assert report["cameras"] == ["front", "wrist"]
    assert report["action_space"] == {
        "shape": [7], "dtype": "float32", "minimum": [-1.0] * 7, "maximum": [1.0] * 7
    }  # fmt: skip
    res = client.post(
        f"/api/studies/{study.id}/state", json={"state": "active", "acknowledge_warnings": True}
    )
    assert res.status_code == 200, res.text


def test_fetch_runs_in_the_robotics_runtime_and_its_first_frame_is_not_black(factory):
    client = factory.client(factory.user())
    (entry,) = [e for e in client.get("/api/catalog").json() if e["key"] == "FetchPickAndPlace"]
    assert entry["installed"] is True and entry["runtime"]["name"] == "robotics"
    thumbnail = client.get(entry["thumbnail_url"])
    assert thumbnail.status_code == 200
    not_black(thumbnail.content)


def test_the_sample_pick_cube_study_validates_with_the_runtime_installed(factory):
    """studies/pick-cube.yaml, as `make run` loads it: imported, it validates clean."""
    client = factory.client(factory.user())
    yaml_type = {"Content-Type": "application/yaml"}
    created = client.post("/api/studies/import", content=SAMPLE.read_bytes(), headers=yaml_type)
    assert created.status_code in (200, 201), created.text
    res = client.post(f"/api/studies/{created.json()['id']}/validate")
    assert res.status_code == 200, res.text
    (report,) = res.json()["environments"]
    assert report["problems"] == [] and report["cameras"] == ["front", "wrist"]
