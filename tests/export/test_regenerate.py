"""Observations regenerated at export (docs/export.md, "Regenerated observations"): PickCube
episodes played through the server in real workers, exported through the API with their
images drawn again at another size from other cameras in real regeneration processes, and
loaded as researchers load them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from server.export.runner import export_dir
from server.recording.log_reader import read_log
from server.runtime.catalog import CATALOG
from tests.player.conftest import counter_env, row_of, spec
from tests.recording.log_edits import rewrite_log
from tests.services.test_replay_verification import play

pytestmark = pytest.mark.skipif(not CATALOG["PickCube"].installed(), reason="no robotics runtime")
os.environ.setdefault("MUJOCO_GL", "egl")

RECORDED_SIZE = 32  # the images as played
KEYS = [["ArrowRight"], ["ArrowRight", "KeyS"], ["KeyS"], ["KeyS"], ["Space"], ["KeyW"], [],
        ["ArrowUp"], ["KeyW"], []]  # fmt: skip


def cube_env(**fields: Any) -> dict[str, Any]:
    kwargs = {"image_size": RECORDED_SIZE, "render_size": 64, "reward_type": "dense"}
    return {
        "id": "cube",
        "name": "Cube",
        "source": {"kind": "gymnasium", "id": "RLDSStudio/PickCube-v0", "kwargs": kwargs},
        "mode": "sync",
        "max_steps": len(KEYS),
        **fields,
    }


def wait_done(client: Any, job_id: int, seconds: float = 240.0) -> tuple[dict, list[dict]]:
    """The finished job, and what polling it showed while it ran."""
    seen = []
    end = time.monotonic() + seconds
    while True:
        body = client.get(f"/api/exports/{job_id}").json()
        seen.append(body)
        if body["state"] not in ("queued", "running") or time.monotonic() > end:
            return body, seen
        time.sleep(0.05)


def recorded(log_dir: Path) -> dict[str, Any]:
    """What the log holds, as RLDS steps: rewards r_t (zero on the last step), the
    observation's state vectors and the step metadata's info texts."""
    _meta, steps = read_log(str(log_dir))
    rewards = [float(s.timestep.reward) for s in steps[1:]] + [0.0]
    return {
        "rewards": rewards,
        "states": np.stack([s.timestep.observation["state"] for s in steps]),
        "infos": [s.custom_data["info"] for s in steps],
        "terminal": bool(steps[-1].timestep.last() and steps[-1].timestep.discount == 0),
    }


def _export(client: Any, study_id: int, ids: list[str], **options: Any) -> Any:
    body = {"selection": {"episode_ids": ids}, "options": {"archive": "folder", **options}}
    return client.post(f"/api/studies/{study_id}/exports", json=body)


@pytest.fixture
def cube(factory: Any) -> dict[str, Any]:
    designer = factory.user()
    study = factory.study(designer, spec(cube_env(), counter_env(episode_len=4)))
    client = factory.client(designer)
    return {"study": study, "client": client}


def test_regenerate_options_are_checked(cube: dict[str, Any], db: Any) -> None:
    client, study = cube["client"], cube["study"]
    cube_id = play(client, study, "cube", KEYS)
    counter_id = play(client, study, "counter", [["KeyA"]] * 4)

    res = _export(client, study.id, [cube_id], regenerate={"image_size": 2000})
    assert res.status_code == 422, res.text
    assert "image_size" in json.dumps(res.json())
    res = _export(client, study.id, [cube_id], regenerate={})
    assert res.status_code == 422 and "image_size, cameras or both" in res.text

    res = _export(client, study.id, [cube_id], regenerate={"cameras": ["top"]})
    assert res.status_code == 422, res.text
    assert "no camera 'top'; its cameras: front, wrist" in res.json()["detail"][0]["msg"]
    assert res.json()["detail"][0]["loc"] == ["body", "options", "regenerate", "cameras"]

    res = _export(client, study.id, [cube_id], regenerate={"image_size": 1024})  # > PickCube's
    assert res.status_code == 422 and "from 32 to 512 px" in res.text

    res = _export(client, study.id, [counter_id], regenerate={"image_size": 64})
    assert res.status_code == 422, res.text
    assert "cannot regenerate its observations" in res.json()["detail"][0]["msg"]
    assert row_of(db, cube_id).status == "completed"


def test_a_regenerated_export_holds_new_images_and_the_recorded_values(
    cube: dict[str, Any], db: Any, settings: Any, tmp_path: Path
) -> None:
    client, study = cube["client"], cube["study"]
    kept = play(client, study, "cube", KEYS)
    liar = play(client, study, "cube", KEYS[::-1])
    liar_log = Path(row_of(db, liar).storage_path)
    rewrite_log(liar_log, step=4, reward=7.5)
    want = recorded(Path(row_of(db, kept).storage_path))

    regenerate = {"image_size": 64, "cameras": ["wrist"]}
    res = _export(client, study.id, [kept, liar], name="cube", regenerate=regenerate)
    assert res.status_code == 202, res.text
    job, seen = wait_done(client, res.json()["id"])
    assert job["state"] == "succeeded", job
    assert job["options"]["regenerate"] == {"image_size": 64, "cameras": ["wrist"]}
    # the episode whose log lies is left out, and said so: the job's message and the card
    assert liar in job["message"] and "diverged from its log at step 4, reward" in job["message"]
    assert any("Regenerating observations" in (s["message"] or "") for s in seen)
    out = export_dir(settings.data_root, job["id"]) / "cube"
    card = (out / "README.md").read_text()
    assert f"left out: episode `{liar}`" in card and "images 64×64 px" in card
    assert not list(out.parent.glob(".*regenerated*"))  # the regenerated logs are gone

    from tests.export.consumers import check_report

    report = check_report("rlds", "regenerated", "rlds", str(out / "cube" / "1.0.0"))
    (episode,) = report["episodes"]
    assert episode["episode_id"] == kept
    shapes = dict(episode["observation"])
    assert len(shapes.pop("sim_state")) == 1  # MuJoCo's state vector, as recorded
    assert shapes == {"state": [18], "wrist": [64, 64, 3]}
    assert episode["reward"] == want["rewards"]  # value for value (float64, exact)
    assert episode["infos"] == want["infos"]
    assert episode["is_terminal"][-1] == want["terminal"]
    np.testing.assert_allclose(np.asarray(episode["state"]), want["states"], rtol=1e-6, atol=1e-6)
    assert json.loads(episode["env_config"])["source"]["kwargs"]["image_cameras"] == ["wrist"]


def test_a_regenerated_lerobot_export_loads_in_lerobot(
    cube: dict[str, Any], db: Any, settings: Any
) -> None:
    client, study = cube["client"], cube["study"]
    episode_id = play(client, study, "cube", KEYS)
    want = recorded(Path(row_of(db, episode_id).storage_path))
    res = _export(
        client, study.id, [episode_id], name="cube", format="lerobot",
        regenerate={"image_size": 48, "cameras": ["front", "wrist"]},
    )  # fmt: skip
    assert res.status_code == 202, res.text
    job, _seen = wait_done(client, res.json()["id"])
    assert job["state"] == "succeeded", job
    assert job["message"] is None  # nothing left out
    out = export_dir(settings.data_root, job["id"]) / "cube"

    from tests.export.consumers import check_report

    report = check_report("lerobot", "regenerated", "lerobot", str(out), "cube")
    assert report["frames"] == len(KEYS) + 1
    assert report["reward"] == pytest.approx(want["rewards"], abs=0)  # float32 of float64
    shapes = report["shapes"]
    assert shapes["observation.images.front"] == [3, 48, 48]
    assert shapes["observation.images.wrist"] == [3, 48, 48]
