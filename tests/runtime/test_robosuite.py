"""Robosuite's tasks, checked where they run: ``tests/runtime/in_robosuite_runtime.py`` under
the robosuite runtime's interpreter (pytest there, the app's worker code on its path, as a
worker runs). Through the app, every robosuite catalog entry also plays in a real worker and
replays bit-exact in the conformance test (tests/runtime/test_conformance.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from server.recording.format import episode_dir
from server.recording.writer import open_reader
from server.runtime import EnvWorker, runtimes
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.catalog import CATALOG
from server.study_spec import EnvironmentSpec

pytestmark = pytest.mark.database_plays_no_part
HERE = Path(__file__).resolve().parent
ALLOWED = AllowedEnvironments.of()


def test_robosuite_tasks_in_their_runtime():
    runtime = runtimes.RUNTIMES["robosuite"]
    found = runtimes.state("robosuite")
    if not found.ok:
        pytest.fail(f"the robosuite runtime is needed: run `make runtimes` ({found.message})")
    # pyproject's pytest options name plugins the runtime lacks: no config file, no conftest
    done = subprocess.run(
        [str(runtime.python), *runtimes.PYTHON_FLAGS, "-m", "pytest", "-q", "-c", "/dev/null",
         "--rootdir", str(HERE.parents[1]), "--noconftest", "-p", "no:cacheprovider",
         "-W", "ignore::DeprecationWarning", str(HERE / "in_robosuite_runtime.py")],
        env=runtimes.worker_env(), capture_output=True, text=True, timeout=280,
        cwd=HERE.parents[1],
    )  # fmt: skip
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) == 9, tail
    assert "failed" not in done.stdout.splitlines()[-1], tail


def test_the_scripted_policy_lifts_the_cube_through_a_worker_in_the_runtime(tmp_path):
    """Shared autonomy in the runtime: with no one at the keys the example policy drives
    (each step's control byte says so) and lifts the cube; the log has it all."""
    entry = CATALOG["Robosuite-Lift"]
    spec = EnvironmentSpec(id="lift", name="Lift", source=entry.source(), mode="sync",
                           policy={"id": "robosuite-pick-scripted"})  # fmt: skip

    # a generous step budget: what is checked is who drives, not this machine's load
    allowed = AllowedEnvironments.of(policy_budget_ms=500)

    async def scenario():
        worker = await EnvWorker.start(spec, allowed=allowed, study_id=3, data_root=tmp_path,
                                       timeout=120, reply_timeout=60)  # fmt: skip
        try:
            events = [await worker.begin_episode("auto", 0)]
            while not events[-1].done and len(events) < 120:
                events.append(await worker.send_input({"keys": []}))
            return events
        finally:
            await worker.close()

    events = asyncio.run(scenario())
    assert events[-1].terminated, len(events)  # the cube is up: success ends the episode
    assert {e.control for e in events[1:]} == {2}  # the policy drove every step
    with open_reader(episode_dir(tmp_path, 3, "auto")) as reader:
        steps = list(reader.steps)
    assert json.loads(steps[-1].custom_data["info"])["is_success"] is True
    assert len(steps) == len(events)


def test_recorded_states_replay_to_the_recorded_images(tmp_path):
    """An episode played through a worker: each step's logged ``sim_state``, restored in a
    new env in the runtime (robomimic's way), draws exactly that step's logged images."""
    entry = CATALOG["Robosuite-PickPlaceCan"]
    spec = EnvironmentSpec(id="can", name="Can", source=entry.source(), mode="sync",
                           controls=entry.controls)  # fmt: skip
    pushes = [["ArrowDown"]] * 8 + [["KeyS"]] * 8 + [["Space"]] + [[]] * 5

    async def scenario():
        worker = await EnvWorker.start(spec, allowed=ALLOWED, study_id=4, data_root=tmp_path,
                                       timeout=120, reply_timeout=60)  # fmt: skip
        try:
            await worker.begin_episode("replayed", 9)
            for keys in pushes:
                await worker.send_input({"keys": keys})
            await worker.end_episode("completed")
        finally:
            await worker.close()

    asyncio.run(scenario())
    with open_reader(episode_dir(tmp_path, 4, "replayed")) as reader:
        steps = list(reader.steps)
    keys = ("agentview_image", "robot0_eye_in_hand_image")
    arrays = {key: np.stack([s.timestep.observation[key] for s in steps]) for key in keys}
    arrays["sim_state"] = np.stack([s.timestep.observation["sim_state"] for s in steps])
    np.savez(tmp_path / "steps.npz", **arrays)
    done = subprocess.run(
        [str(runtimes.RUNTIMES["robosuite"].python), *runtimes.PYTHON_FLAGS,
         str(HERE / "robosuite_restore.py"), str(tmp_path / "steps.npz"), entry.id or "",
         json.dumps(entry.source().kwargs)],
        env=runtimes.worker_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"steps": len(pushes) + 1, "max_diff": dict.fromkeys(keys, 0)}
    moved = arrays["sim_state"][-1] - arrays["sim_state"][0]
    assert np.abs(moved).max() > 0.01  # the arm moved: the states are not all alike
