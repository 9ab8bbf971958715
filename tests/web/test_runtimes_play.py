"""Suites whose dependencies conflict, side by side on one server (real Chromium): a study with
Robosuite's PickPlaceCan (the robosuite runtime), Fetch pick-and-place (the app's own
environment) and a dm_control task (the dm_control runtime) is validated in the editor and
played by a participant, one episode of each; the three episodes export as RLDS, LeRobot and
Minari and load with TFDS+rlds, LeRobotDataset and minari, each step's action as recorded. And
a teleoperator lifts Robosuite's cube with the keyboard alone.

Keys are held as a person holds them: down, watch the step counter on screen for as long as
the move takes, up (tests/web/_teleop.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from server.export import EpisodeInput, ExportOptions, export_dataset
from server.models import Episode, EpisodeStatus
from server.recording import deferred
from server.recording.writer import open_reader
from server.runtime import completion, runtimes
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.catalog import CATALOG
from server.services.jobs.replay_checks import runtime_of_log
from tests.player.conftest import activate, spec
from tests.runtime.in_robosuite_runtime import LIFT_KEYS
from tests.web._join import join_study, to_ready_gate
from tests.web._teleop import hold, load_steps, open_game, save_episode, steps_on_screen
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("STUDIO_SHOTS", "/tmp/shots/runtimes"))
# name on screen → catalog entry; each plays a short episode (max_steps ends it)
GAMES = {"Can": "Robosuite-PickPlaceCan", "Fetch": "FetchPickAndPlace",
         "Point mass": "dm_control-point_mass-easy"}  # fmt: skip
MAX_STEPS = 30
KEYS = {"Can": "ArrowDown", "Fetch": "ArrowRight", "Point mass": "ArrowUp"}


@pytest.fixture(autouse=True)
def _runtimes_installed():
    for name in ("robosuite", "dm_control"):
        found = runtimes.state(name)
        if not found.ok:
            pytest.fail(f"the {name} runtime is needed: run `make runtimes` ({found.message})")


def _env(name: str, key: str, **fields) -> dict:
    entry = CATALOG[key]
    return {"id": key.lower().replace("_", "-"), "name": name, "mode": entry.mode,
            "fps": entry.fps, "source": entry.source().model_dump(), "seeds": [3],
            "max_steps": MAX_STEPS, **fields}  # fmt: skip


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.mark.consumer  # the exports are loaded by each format's own library
def test_one_server_validates_plays_and_exports_robosuite_fetch_and_dm_control(
    live_server, page, factory, db, tmp_path
):
    designer = factory.user()
    study = factory.study(
        designer, spec(*(_env(name, key) for name, key in GAMES.items()), name="Side by side")
    )
    # the designer validates: each environment builds in its own runtime's worker
    log_in(page, live_server, designer)
    page.get_by_role("button", name="Side by side").click()
    page.get_by_role("button", name="Validate").click()
    for name in GAMES:
        report = page.get_by_role("article", name=f"Validation of {name}")
        expect(report.locator("h4")).to_contain_text("builds", timeout=120_000)
        expect(report.get_by_role("img", name=f"First frame of {name}")).to_be_visible()
    expect(page.get_by_role("article", name="Validation of Can")).to_contain_text(
        "front, wrist"
    )  # its cameras
    _shot(page, "validated")

    activate(db, study)
    db.refresh(study)
    join_study(page, live_server, study.permalink_token, "P-1")
    for i, name in enumerate(GAMES):
        if i:
            page.get_by_role("button", name="Choose another game").click()
        to_ready_gate(page, name)
        page.keyboard.press("Enter")
        expect(page.locator("#st-phase")).to_have_text("playing")
        hold(page, KEYS[name], 8)
        _shot(page, f"playing-{name}")
        expect(page.locator("#save-dialog")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Save").click()
        expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")

    rows = db.query(Episode).filter_by(study_id=study.id).all()
    for row in rows:
        db.refresh(row)
    by_env = {row.env_key: row for row in rows}
    assert sorted(by_env) == sorted(_env(n, k)["id"] for n, k in GAMES.items())
    assert all(row.status == EpisodeStatus.completed for row in rows)
    assert all(row.steps == MAX_STEPS + 1 for row in rows)
    # with no background replay check to draw them afterwards (this server runs none), the
    # play path draws Robosuite's observation images itself: nothing is left to complete
    # (deferral and its completion: tests/runtime/test_robosuite.py, test_replay_verification)
    assert {row.env_key: deferred.pending(Path(row.storage_path)) for row in rows} == {
        row.env_key: [] for row in rows
    }
    for row in rows:
        log_dir = Path(row.storage_path)
        done = completion.complete_log(log_dir, runtime_of_log(log_dir), AllowedEnvironments.of(),
                                       timeout_s=300, memory_mb=None)  # fmt: skip
        assert done == {"result": "completed", "steps": None}, done
    logged = {}
    for row in rows:
        with open_reader(row.storage_path) as reader:
            logged[row.id] = list(reader.steps)
    can = logged[by_env["robosuite-pickplacecan"].id]
    obs = can[-1].timestep.observation
    assert obs["agentview_image"].shape == obs["robot0_eye_in_hand_image"].shape == (128, 128, 3)
    assert obs["agentview_image"].std() > 1 and obs["robot0_eye_in_hand_image"].std() > 1  # drawn
    assert obs["sim_state"].dtype == np.float64 and obs["sim_state"].shape == (71,)
    held = {k for s in can[1:] for k in (json.loads(s.custom_data["input"]) or {}).get("keys", [])}
    assert held == {"ArrowDown"}
    moved = (
        can[-1].timestep.observation["robot0_eef_pos"]
        - can[0].timestep.observation["robot0_eef_pos"]
    )
    assert moved[0] > 0.02  # nearer the front camera, as ArrowDown says

    # each environment's episodes are a dataset of their own (their spaces differ): exported
    # in three formats, loaded by each one's own library
    for row in rows:
        episode = EpisodeInput(log_dir=row.storage_path, episode_id=row.id, agent_id="P-1")
        want = np.stack([np.asarray(s.action, dtype=np.float64) for s in logged[row.id][1:]])
        for fmt in ("rlds", "lerobot", "minari"):
            options = ExportOptions(name="side", format={"rlds": "tfds"}.get(fmt, fmt))
            result = export_dataset([episode], options, tmp_path / row.env_key / fmt)
            loaded = load_steps(fmt, result.data_dir if fmt == "rlds" else result.path, "side")
            ((actions,), (keys,)) = loaded["actions"], loaded["observations"]
            actions = np.asarray(actions, dtype=np.float64)
            if fmt != "minari":  # RLDS and LeRobot: a_t beside o_t, a zero after the last
                actions = actions[:-1]
            np.testing.assert_allclose(actions, want, rtol=1e-6, err_msg=f"{row.env_key} {fmt}")
            if row.env_key == "robosuite-pickplacecan":
                assert "sim_state" in " ".join(keys) and "agentview_image" in " ".join(keys), (
                    fmt, keys)  # fmt: skip


def test_a_teleoperator_lifts_robosuites_cube_with_the_keyboard_alone(
    live_server, page, factory, db
):
    entry = CATALOG["Robosuite-Lift"]
    # 10 steps a second instead of 20: a key let go some tens of milliseconds late on a busy
    # machine still ends on the step meant (the arm moves the same per step)
    study = open_game(page, live_server, factory, db, entry, name="Lift", seeds=[0], fps=10,
                      max_steps=400, instructions="Lift the red cube.")  # fmt: skip
    legend = page.locator("#legend")
    expect(legend).to_contain_text("close / open the gripper (toggle)")
    expect(legend).to_contain_text("hand up")
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    _shot(page, "lift-start")
    for keys, steps in LIFT_KEYS:
        if keys == "Space":  # a tap: the gripper stays shut
            page.keyboard.down("Space")
            page.wait_for_timeout(120)
            page.keyboard.up("Space")
            continue
        # hold the keys (or none) while the picture moves on ``steps`` steps, or until the
        # cube is up and the episode ends by itself (the save question is asked)
        start = steps_on_screen(page)
        if keys:
            page.keyboard.down(keys)
        page.wait_for_function(
            """(n) => Number(document.getElementById('st-step').textContent) >= n
                      || document.getElementById('save-dialog').open""",
            arg=start + steps, polling=5,
        )  # fmt: skip
        if keys:
            page.keyboard.up(keys)
    _shot(page, "lift-up")
    row, steps = save_episode(page, db, study)  # success ends the episode
    assert row.steps < 400  # it ended on success, not on the step limit
    info = json.loads(steps[-1].custom_data["info"])
    assert info["is_success"] is True
    assert float(steps[-1].timestep.discount) == 0.0  # terminated
    heights = [float(s.timestep.observation["object_pos"][2]) for s in steps]
    # robosuite's success: the cube's centre 4 cm over the table top (it rests 3 cm over it)
    assert heights[-1] - heights[0] > 0.01 and heights[-1] > 0.84
    inputs = [json.loads(s.custom_data["input"]) for s in steps[1:]]
    assert all(i is None or (i["axes"] == [] and i["buttons"] == {}) for i in inputs)
    held = {k for i in inputs if i for k in i["keys"]}
    assert held == {"ArrowDown", "ArrowRight", "KeyS", "Space", "KeyW"}
