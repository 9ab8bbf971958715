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
DRAWN = AllowedEnvironments.of(defer_images=False)  # every image drawn on the play path
IMAGE_KEYS = ("agentview_image", "robot0_eye_in_hand_image")


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
    """An episode played through a worker that draws every image on the play path (the old
    way): each step's logged ``sim_state``, restored in a new env in the runtime (robomimic's
    way), draws exactly that step's logged images."""
    entry = CATALOG["Robosuite-PickPlaceCan"]
    spec = EnvironmentSpec(id="can", name="Can", source=entry.source(), mode="sync",
                           controls=entry.controls)  # fmt: skip
    pushes = [["ArrowDown"]] * 8 + [["KeyS"]] * 8 + [["Space"]] + [[]] * 5

    async def scenario():
        worker = await EnvWorker.start(spec, allowed=DRAWN, study_id=4, data_root=tmp_path,
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


def _play(spec: EnvironmentSpec, allowed: AllowedEnvironments, data_root: Path, pushes) -> None:
    """One episode ``"can"`` of study 5 with seed 9, ``pushes`` one sync step each."""

    async def scenario():
        worker = await EnvWorker.start(spec, allowed=allowed, study_id=5, data_root=data_root,
                                       timeout=120, reply_timeout=60)  # fmt: skip
        try:
            await worker.begin_episode("can", 9)
            for i, keys in enumerate(pushes):
                if keys == ["camera"]:  # the player's Next camera
                    await worker.set_camera("wrist")
                await worker.send_input({"keys": keys}, {"input_sent": 1000.0 + i})
            await worker.end_episode("completed")
        finally:
            await worker.close()

    asyncio.run(scenario())


def _rlds_values(log_dir: Path, out: Path) -> dict[str, list]:
    """Every feature of the episode's RLDS export (one TFRecord example), by name."""
    from tensorflow_datasets.proto import tf_example_pb2

    from server.export import EpisodeInput, ExportOptions, export_dataset
    from server.export.formats.rlds.tfrecord import read_records

    episode = EpisodeInput(log_dir=log_dir, episode_id="can", agent_id="agent", status="completed")
    export_dataset([episode], ExportOptions(format="tfds"), out)
    (shard,) = [p for p in out.rglob("*.tfrecord*") if p.is_file()]
    (record,) = list(read_records(shard))
    example = tf_example_pb2.Example.FromString(record)
    values = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        values[name] = list(getattr(feature, kind).value)
    return values


def test_played_the_new_way_exports_what_the_old_way_does(tmp_path):
    """The play path draws only the view shown: the log's observation images are
    placeholders, the episode is not exportable, until the completion draws them from the
    recorded states; then its RLDS export is value for value that of the same seed and
    actions played with every image drawn on the play path."""
    from server.export import ExportError
    from server.export.base import EpisodeInput, check_complete
    from server.recording import deferred
    from server.runtime import completion

    entry = CATALOG["Robosuite-PickPlaceCan"]
    spec = EnvironmentSpec(id="can", name="Can", source=entry.source(), mode="sync",
                           controls=entry.controls)  # fmt: skip
    pushes = [["ArrowDown"]] * 6 + [["KeyS"]] * 6 + [["Space"]] + [["camera"]] + [["KeyW"]] * 4
    new_root, old_root = tmp_path / "new", tmp_path / "old"
    _play(spec, ALLOWED, new_root, pushes)
    _play(spec, DRAWN, old_root, pushes)
    new_log, old_log = episode_dir(new_root, 5, "can"), episode_dir(old_root, 5, "can")

    assert deferred.pending(new_log) == list(IMAGE_KEYS) and deferred.pending(old_log) == []
    with open_reader(new_log) as reader:
        live = list(reader.steps)
    for step in live:  # not drawn on the play path
        for key in IMAGE_KEYS:
            assert not step.timestep.observation[key].any()
    with pytest.raises(ExportError, match="still being drawn"):
        check_complete(EpisodeInput(log_dir=new_log, episode_id="can", agent_id="a"))

    done = completion.complete_log(new_log, "robosuite", ALLOWED, timeout_s=300, memory_mb=None)
    assert done is not None and done["result"] == "completed", done
    assert done["steps"] == len(pushes)
    assert deferred.pending(new_log) == []
    assert sorted(p.name for p in new_log.parent.iterdir()) == ["can"]  # nothing left beside

    with open_reader(new_log) as reader:
        completed = list(reader.steps)
    with open_reader(old_log) as reader:
        drawn = list(reader.steps)
    assert len(completed) == len(drawn) == len(pushes) + 1
    assert all(s.timestep.observation[IMAGE_KEYS[0]].any() for s in completed)

    new, old = (
        _rlds_values(new_log, tmp_path / "new.out"),
        _rlds_values(old_log, tmp_path / "old.out"),
    )
    assert set(new) == set(old)
    # all that differs between the two plays is when the worker applied each step
    differing = sorted(k for k in old if new[k] != old[k])
    assert set(differing) <= {"steps/timing/applied_ms"}, differing
    for key in IMAGE_KEYS:  # the images are in the export (as JPEG/PNG bytes), the same
        name = next(k for k in old if k.endswith(f"observation/{key}"))
        assert new[name] == old[name] and len(new[name]) == len(pushes) + 1
    assert new["steps/action"] == old["steps/action"] and new["steps/reward"] == old["steps/reward"]


def test_a_check_compares_the_state_at_every_step_and_images_at_a_sample(tmp_path):
    """Verification of a Robosuite episode draws no frame and the observation's images only
    every 20th step (and the first and last): an image changed between those goes unseen,
    the state changed there does not; a study that asks for every step's images
    (``verify_images: every_step``) finds the image too."""
    from server.runtime import completion
    from server.runtime.replay_check import IMAGES_EVERY
    from server.runtime.replay_process import verify_log
    from tests.recording.log_edits import rewrite_log

    entry = CATALOG["Robosuite-Lift"]
    pushes = [["ArrowDown"]] * 12 + [["KeyS"]] * 12
    assert 5 % IMAGES_EVERY and len(pushes) > IMAGES_EVERY

    def recorded(root: Path, verify_images: str) -> Path:
        spec = EnvironmentSpec(id="can", name="Lift", source=entry.source(), mode="sync",
                               controls=entry.controls, verify_images=verify_images)  # fmt: skip
        _play(spec, ALLOWED, root, pushes)
        log_dir = episode_dir(root, 5, "can")
        done = completion.complete_log(log_dir, "robosuite", ALLOWED, timeout_s=300,
                                       memory_mb=None)  # fmt: skip
        assert done is not None and done["result"] == "completed", done
        return log_dir

    def check(log_dir: Path) -> dict:
        found = verify_log(log_dir, "robosuite", ALLOWED, end_reason="completed",
                           timeout_s=300, memory_mb=None, cpu_share=0.5)  # fmt: skip
        assert found is not None
        return found

    def brighter(obs):
        return {**obs, "agentview_image": obs["agentview_image"] // 2 + 100}

    def moved(obs):
        state = obs["sim_state"].copy()
        state[3] += 1e-3
        return {**obs, "sim_state": state}

    sampled = recorded(tmp_path / "sample", "sample")
    assert check(sampled)["verdict"] == "verified"
    rewrite_log(sampled, step=5, observation=brighter)
    assert check(sampled)["verdict"] == "verified"  # not a sampled step
    rewrite_log(sampled, step=5, observation=moved)
    found = check(sampled)
    assert found["verdict"] == "diverged", found
    assert found["difference"]["step"] == 5
    assert found["difference"]["field"].startswith("observation/sim_state")

    every = recorded(tmp_path / "every", "every_step")
    rewrite_log(every, step=5, observation=brighter)
    found = check(every)
    assert found["verdict"] == "diverged", found
    assert found["difference"]["step"] == 5
    assert found["difference"]["field"].startswith("observation/agentview_image")
