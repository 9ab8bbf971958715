"""What Validate asks of an env hosted in a worker between episodes, nothing of it recorded: its
``info`` (specs, cameras, controls, pace), a ``preview`` (the first frame, inputs mapped to
actions), a ``policy_trial`` (the shared-autonomy policy timed on a few steps) and a
``replay_trial`` (whether a fresh copy of the environment replays what this one did:
:func:`server.runtime.replay_check.trial`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.recording.writer import to_json
from server.runtime import replay_check, space_specs
from server.runtime.adapters import EnvAdapter, build_adapter
from server.runtime.catalog import find_entry
from server.runtime.frames import check_observation

if TYPE_CHECKING:
    from server.runtime.hosted_env import HostedEnv


def info(s: HostedEnv, _payload: Any = None) -> dict[str, Any]:
    """What ``EnvWorker.info`` shows: specs, cameras, controls, fps, mode."""
    entry = find_entry(s.spec.source)
    native_fps, frameskip = s.env.native_rate()
    return {
        "observation_spec": space_specs.describe(s.env.observation_spec()),
        "action_spec": space_specs.describe(s.env.action_spec()),
        "action_meanings": s.env.action_meanings,
        "cameras": list(s.env.cameras),
        "camera": s.env.camera,
        "controls": s.mapper.resolved(),
        "fps": s.spec.fps,
        "mode": s.spec.mode,
        "catalog_key": entry.key if entry else None,
        "native_fps": native_fps,
        "frameskip": frameskip,
    }


def preview(s: HostedEnv, payload: dict[str, Any]) -> dict[str, Any]:
    """Reset (not recorded), then step once per input; the first frame as JPEG."""
    inputs = payload.get("inputs") or []
    s.env.set_seed(payload.get("seed"))
    s.mapper.reset()
    timestep = s.env.reset()
    check_observation(timestep.observation)
    first = s.frame_jpeg()
    actions = []
    for raw in inputs:
        if timestep.last():
            timestep = s.env.reset()
        action = s.mapper(raw)
        timestep = s.env.step(action)
        s.env.frame()  # each step must render too
        actions.append(to_json(action))
    return {"frame": first, "actions": actions}


def policy_trial(s: HostedEnv, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Validate's timing of the policy (None without one): reset with ``seed``, then the
    policy drives a few steps, nothing recorded (``SharedAutonomy.trial``)."""
    if s.autonomy is None:
        return None
    s.env.set_seed(payload.get("seed"))

    def step(action: Any) -> Any:
        timestep = s.env.step(action)
        return (s.env.reset() if timestep.last() else timestep).observation

    return s.autonomy.trial(lambda: s.env.reset().observation, step)


def replay_trial(s: HostedEnv, payload: dict[str, Any]) -> dict[str, Any]:
    """Validate's determinism check: this env runs trial actions from a reset with ``seed``,
    then a second one built from the same spec replays them (nothing recorded)."""

    def fresh() -> EnvAdapter:
        adapter = build_adapter(s.spec.source, s.allowed)
        if s.spec.camera:
            adapter.set_camera(s.spec.camera)
        return adapter

    seed = payload.get("seed")
    return replay_check.trial(s.env, fresh, 0 if seed is None else int(seed))


COMMANDS = {  # the worker commands
    "preview": preview,
    "policy_trial": policy_trial,
    "replay_trial": replay_trial,
}
