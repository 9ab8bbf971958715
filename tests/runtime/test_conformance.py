"""Every installed catalog environment passes the same end-to-end check.

Through a real worker: reset, mapped inputs, steps, frames and recording; then the log is
read back with ``envlogger.Reader`` and every step's observation, action, reward, discount
and metadata is compared with what was sent and with an in-process replay (same seed, same
actions) of the same adapter, once the log is complete (observation images a worker leaves
out of a person's steps drawn from the recorded states: server/runtime/completion.py).
"""

from __future__ import annotations

import json
import pickle
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from server.recording.format import STEP_METADATA_KEYS, episode_dir
from server.recording.writer import open_reader
from server.runtime import EnvWorker, completion, runtimes
from server.runtime.catalog import CATALOG, runtime_of
from server.services.studies.env_validation import SPEED_TOLERANCE
from server.study_spec import EnvironmentSpec
from tests.runtime.conftest import ALLOWED, run
from tests.runtime.replay_in_runtime import replay as replay_here

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

INSTALLED = [entry for entry in CATALOG.values() if entry.installed()]
MAX_STEPS = 5
SEED = 11


def sample_inputs(controls: Any) -> list[dict[str, Any]]:
    """A few inputs exercising the entry's own bindings, axes and the noop."""
    inputs: list[dict[str, Any]] = [{"keys": combo.split("+")} for combo in controls.keys][:3]
    inputs += [{"keys": []}, {"axes": [0.7, -0.7, 0.3, 0.9], "buttons": {"0": 1.0}}]
    return inputs + [{"keys": []}] * MAX_STEPS


def assert_same(recorded: Any, expected: Any) -> None:
    """Equal values, nest structure and dtypes."""
    if isinstance(expected, dict):
        assert set(recorded) == set(expected)
        for key in expected:
            assert_same(recorded[key], expected[key])
    elif isinstance(expected, tuple | list):
        assert len(recorded) == len(expected)
        for r, e in zip(recorded, expected, strict=True):
            assert_same(r, e)
    elif isinstance(expected, str):
        assert str(recorded) == expected
    else:
        recorded, expected = np.asarray(recorded), np.asarray(expected)
        assert recorded.dtype == expected.dtype
        np.testing.assert_array_equal(recorded, expected)


def replay(spec: EnvironmentSpec, inputs: list[dict[str, Any]], steps: int) -> list[tuple]:
    """In-process run of the same adapter: [(timestep, action)] for FIRST and each step (in
    the entry's runtime's interpreter when it has one of its own)."""
    runtime = runtime_of(spec.source)
    if runtime != runtimes.APP:
        done = subprocess.run(
            [str(runtimes.RUNTIMES[runtime].python), *runtimes.PYTHON_FLAGS,
             str(Path(__file__).with_name("replay_in_runtime.py"))],
            input=pickle.dumps((spec.model_dump_json(), inputs, steps, SEED)),
            capture_output=True, env=runtimes.worker_env(), timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        return pickle.loads(done.stdout)
    return replay_here(spec, inputs, steps, SEED, ALLOWED)


@pytest.mark.parametrize("entry", INSTALLED, ids=lambda e: e.key)
def test_catalog_environment_conformance(entry, data_root):
    spec = EnvironmentSpec(
        id="conformance", name=entry.key, source=entry.source(), max_steps=MAX_STEPS
    )
    inputs = sample_inputs(entry.controls)

    async def scenario():
        worker = await EnvWorker.start(
            spec, allowed=ALLOWED, study_id="conf", data_root=data_root, timeout=60
        )
        try:
            assert worker.info["controls"]["problems"] == []
            events = [await worker.begin_episode("ep", SEED)]
            for i, raw in enumerate(inputs):
                timing = {"input_sent": 1000.0 + i, "seen_step": i}
                events.append(await worker.send_input(raw, timing))
                if events[-1].done:
                    break
            await worker.end_episode("completed")
            return events
        finally:
            await worker.close()

    events = run(scenario())
    assert events[-1].done and len(events) <= MAX_STEPS + 1
    assert all(e.frame[:2] == b"\xff\xd8" for e in events)
    expected, (obs_spec, act_spec) = replay(spec, inputs, len(events) - 1)
    log_dir = episode_dir(data_root, "conf", "ep")
    # images left out on the play path are drawn from the recorded states (none elsewhere)
    done = completion.complete_log(log_dir, runtime_of(spec.source), ALLOWED, timeout_s=120,
                                   memory_mb=None)  # fmt: skip
    assert done is not None and done["result"] == "completed", done

    with open_reader(log_dir) as reader:
        steps = list(reader.steps)
        meta = reader.metadata()
    assert meta["env_id"] == "conformance" and meta["seed"] == SEED
    assert EnvironmentSpec.model_validate_json(meta["env_config"]) == spec
    assert len(steps) == len(events) == len(expected)
    for i, (step, event, (timestep, action)) in enumerate(
        zip(steps, events, expected, strict=True)
    ):
        assert step.timestep.step_type == timestep.step_type
        assert_same(step.timestep.observation, timestep.observation)
        if i == 0:
            assert step.action is None
        else:
            assert_same(step.action, action)
            assert float(step.timestep.reward) == timestep.reward == event.reward
            assert float(step.timestep.discount) == float(timestep.discount)
        _validate(obs_spec, step.timestep.observation)
        if step.action is not None:
            _validate(act_spec, step.action)
        data = step.custom_data
        assert tuple(data) == STEP_METADATA_KEYS or set(data) == set(STEP_METADATA_KEYS)
        assert data["frame"] == event.frame
        assert json.loads(data["input"]) == (None if i == 0 else inputs[i - 1])
        timing = json.loads(data["timing"])
        if i:
            assert timing["input_sent"] == 1000.0 + i - 1 and timing["seen_step"] == i - 1
        assert isinstance(json.loads(data["info"]), dict)
    assert float(steps[-1].timestep.discount) == (0.0 if events[-1].terminated else 1.0)


def _validate(spec: Any, value: Any) -> None:
    if isinstance(spec, dict):
        for key, sub in spec.items():
            _validate(sub, value[key])
    elif isinstance(spec, tuple):
        for sub, v in zip(spec, value, strict=True):
            _validate(sub, v)
    elif np.dtype(spec.dtype) != np.dtype(object):
        spec.validate(np.asarray(value))


def control_inputs(controls: Any) -> list[tuple[str, dict[str, Any]]]:
    """One input per bound control: each key combo, button and axis direction."""
    inputs = [(combo, {"keys": combo.split("+")}) for combo in controls.keys]
    inputs += [(f"button {b}", {"buttons": {str(b): 1.0}}) for b in controls.buttons]
    for ax in controls.axes:
        for value in (-1.0, 1.0):
            axes = [0.0] * (ax.axis + 1)
            axes[ax.axis] = value
            raw = {"axes": axes} if ax.source == "gamepad" else {"devices": {ax.source: axes}}
            inputs.append((f"{ax.source} axis {ax.axis} {value:+g}", raw))
    return inputs


@pytest.mark.parametrize("entry", INSTALLED, ids=lambda e: e.key)
def test_catalog_defaults_play_right(entry, data_root):
    """Every action is bound, every binding acts, a frame renders, and it plays at 1×."""
    spec = EnvironmentSpec(
        id="defaults", name=entry.key, source=entry.source(), mode=entry.mode, fps=entry.fps
    )
    inputs = control_inputs(entry.controls)

    async def scenario():
        worker = await EnvWorker.start(
            spec, allowed=ALLOWED, study_id="conf", data_root=data_root, timeout=60,
            reply_timeout=60,  # a preview steps once per binding: slow on a busy machine
        )  # fmt: skip
        try:
            preview = await worker.preview(SEED, [raw for _, raw in inputs])
            # a new preview starts with every toggle off (as an episode does): the noop
            rest = await worker.preview(SEED, [{"keys": []}])
            return worker.info, preview, rest
        finally:
            await worker.close()

    info, preview, rest = run(scenario())
    assert preview["frame"][:2] == b"\xff\xd8"
    controls = info["controls"]
    assert controls["problems"] == [] and controls["unbound"] == []
    assert controls["unused"] == {}, "default controls bound to actions the game lacks"
    actions = [json.loads(a) for a in preview["actions"]]
    [noop] = [json.loads(a) for a in rest["actions"]]
    assert noop == controls["noop"] and len(actions) == len(inputs)  # a step each
    if isinstance(noop, int):  # discrete: together the controls reach every action
        assert {*actions, noop} == set(range(info["action_spec"]["num_values"]))
    if entry.mode == "async":
        assert info["native_fps"], "the environment's real pace is unknown"
        effective = entry.fps / info["native_fps"]
        if entry.pace:  # slowed down on purpose, and says so
            assert effective < 1 - SPEED_TOLERANCE and f"{effective:.1f}×" in entry.pace
        else:
            assert abs(effective - 1) <= SPEED_TOLERANCE, f"plays at {effective:.2f}× real speed"
