"""What the player page shows of a study: names, instructions as safe HTML, controls legend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markdown_it import MarkdownIt

from server.models import ended_by
from server.player.legend import (
    DEVICE_AXIS_NAMES,
    DEVICE_BUTTONS,
    axis_name,
    input_name,
    legend_groups,
)
from server.runtime.catalog import allows_end, default_controls
from server.study_spec import MAX_TOUCH_BUTTONS, Controls, EnvironmentSpec, StudySpec
from server.study_spec.touch import TOUCH_BUTTONS, playable_by_touch

if TYPE_CHECKING:
    from server.player.episode_run import EpisodeRun

# html disabled: raw HTML in a study's markdown is shown as text, never run.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False})


def render_markdown(text: str) -> str:
    """Safe HTML of a designer's markdown."""
    return _md.render(text or "")


def _controls(env: EnvironmentSpec) -> Controls:
    return env.controls if env.controls is not None else default_controls(env.source)


def uses_phone(env: EnvironmentSpec) -> bool:
    """True when the environment's controls read a paired phone (its axes or buttons)."""
    controls = _controls(env)
    return any(ax.source == "phone" for ax in controls.axes) or any(
        part.startswith("Phone") for combo in controls.keys for part in combo.split("+")
    )


def environment_view(env: EnvironmentSpec, completed: int = 0) -> dict[str, Any]:
    """One environment as the page lists it."""
    return {
        "phone": uses_phone(env),
        # a touch screen reaches its actions (touch controls or key buttons): a phone is told
        # before consent when it does not (server/study_spec/touch.py)
        "touch": playable_by_touch(_controls(env)),
        "id": env.id,
        "name": env.name,
        "mode": env.mode,
        "fps": env.fps,
        "instructions_html": render_markdown(env.instructions),
        "episodes_per_participant": env.episodes_per_participant,
        "allow_end": allows_end(env),  # "I'm done": the participant may end an episode
        "completed": completed,
        "countdown_s": env.countdown_s if env.mode == "async" else 0,
        # async: the speed in force and what the player may pick (empty: fixed)
        "speed": env.speed,
        "speed_choices": env.speed_choices if env.mode == "async" else [],
        # the tasks a player picks from before an episode (``choice``); otherwise drawn
        "task_order": env.task_order if env.tasks else None,
        "tasks": [t.public() for t in env.tasks] if env.task_order == "choice" else [],
    }


def study_view(
    study_id: int, spec: StudySpec, completed: dict[str, int] | None = None
) -> dict[str, Any]:
    """The study as the page shows it before and while playing."""
    done = completed or {}
    return {
        "id": study_id,
        "name": spec.name,
        "description": spec.description,
        "instructions_html": render_markdown(spec.instructions),
        "pause_timeout_s": spec.pause_timeout_s,
        "consent_html": render_markdown(spec.crowd.consent),
        "assignment": spec.crowd.assignment,
        "allow_anonymous": spec.crowd.allow_anonymous,
        "inputs": spec.crowd.inputs,
        "phone": any(uses_phone(e) for e in spec.environments),
        "narrate_episodes": spec.narrate_episodes,
        "environments": [environment_view(e, done.get(e.id, 0)) for e in spec.environments],
        "kind": spec.kind,
        "judging": judging_view(spec),
    }


def judging_view(spec: StudySpec) -> dict[str, Any] | None:
    """What a judge's page needs to know before the first item (never the gold)."""
    feedback = spec.judging
    if feedback is None:
        return None
    return {
        "judgements_per_participant": feedback.judgements_per_participant,
        "min_watch_s": feedback.min_watch_s,
        "fps": feedback.fps,
        "questions": [q.model_dump(exclude={"id"}) | {"id": q.id} for q in feedback.questions],
    }


def controls_legend(info: dict[str, Any], dimensions: Sequence[str] = ()) -> dict[str, Any]:
    """Legend rows (each binding, and ``groups``: the legend a person reads,
    :func:`~server.player.legend.legend_groups`) and the bound browser keys, from a worker's
    resolved controls; ``dimensions`` name a vector action's dimensions."""
    controls = info.get("controls") or {}
    labels: dict[str, str] = controls.get("labels") or {}
    meanings: list[str] = info.get("action_meanings") or []
    rows = []
    keys: set[str] = set()
    pads: list[dict[str, Any]] = []  # on-screen buttons: one per key binding
    devices: set[str] = set()  # devices some binding reads (besides keyboard and gamepad)
    # the touch controls (web/player/touchpad.js): the pads' axes and big buttons bound
    touch_axes: dict[int, str] = {}
    touch_buttons: list[dict[str, str]] = []
    for name, value in (controls.get("bindings") or {}).items():
        short = name.removeprefix("button ")
        label = labels.get(name) or labels.get(short)
        if label is None and isinstance(value, int) and 0 <= value < len(meanings):
            label = meanings[value].replace("_", " ").lower()
        parts = [p for p in name.split("+") if p]
        rows.append({"input": input_name(name), "label": label or f"action {value}"})
        devices.update(DEVICE_BUTTONS[p][0] for p in parts if p in DEVICE_BUTTONS)
        if parts and parts[0] in TOUCH_BUTTONS and len(parts) == 1:
            touch_buttons.append({"key": parts[0], "label": label or f"action {value}"})
        if not name.startswith(("button ", "axis ", *(f"{d} " for d in DEVICE_AXIS_NAMES))):
            keys.update(p for p in parts if p not in DEVICE_BUTTONS)
            if not any(p in DEVICE_BUTTONS for p in parts):  # a device's button is no tap
                pads.append({"keys": parts, "input": name, "label": label or f"action {value}"})
    deadzone = controls.get("deadzone", 0.15)
    for axis in controls.get("axes") or []:
        source = axis.get("source", "gamepad")
        if source != "gamepad":
            devices.add(source)
        elif axis.get("deadzone") is not None:  # the page zeroes only what no binding reads
            deadzone = min(deadzone, axis["deadzone"])
        if source == "touch":
            key = f"touch {axis['axis']}"
            touch_axes.setdefault(
                axis["axis"], labels.get(key) or f"action dimension {axis.get('dim', 0)}"
            )
        if axis.get("negative") is None and axis.get("positive") is None:  # a vector's axis
            key = f"axis {axis['axis']}" if source == "gamepad" else f"{source} {axis['axis']}"
            rows.append(
                {
                    "input": axis_name(source, axis["axis"]),
                    "label": labels.get(key) or f"action dimension {axis.get('dim', 0)}",
                }
            )
    reads_touch = bool(touch_axes or touch_buttons)
    return {"legend": rows, "groups": legend_groups(info, dimensions),
            "keys": sorted(keys), "deadzone": deadzone,
            "devices": sorted(devices),  # which device hints and buttons the page shows
            # a tap sends exactly the keys of its binding; none when too many for a thumb,
            # or when the touch controls (web/player/touchpad.js) play instead
            "touch": pads if len(pads) <= MAX_TOUCH_BUTTONS and not reads_touch else [],
            "touch_controls": {"axes": {str(i): text for i, text in sorted(touch_axes.items())},
                               "buttons": touch_buttons} if reads_touch else None}  # fmt: skip


def env_ready(
    env_id: str, info: dict[str, Any], speed: float, quality: str, dimensions: Sequence[str] = ()
) -> dict[str, Any]:
    """The ``env_ready`` message: mode, cameras, settings and the controls legend."""
    return {"type": "env_ready", "env_id": env_id, "mode": info.get("mode"),
            "fps": info.get("fps"), "cameras": info.get("cameras") or [],
            "camera": info.get("camera"), "speed": speed, "quality": quality,
            "controls": controls_legend(info, dimensions)}  # fmt: skip


def episode_view(run: EpisodeRun | None, spec: StudySpec) -> dict[str, Any] | None:
    """The running episode as ``hello`` and ``episode_started`` show it."""
    if run is None:
        return None
    return {"id": run.id, "index": run.index, "env_id": run.env_id, "seed": run.seed,
            "step": run.step, "return": run.return_,
            "task": None if run.task is None else run.task.public(),
            "ask_outcome": spec.asks_outcome(run.env_id),
            "ended_by": ended_by(run.end_reason)}  # fmt: skip


def ended_message(run: EpisodeRun, spec: StudySpec) -> dict[str, Any]:
    """``episode_ended``: the environment or the participant ended the episode (``ended_by``);
    the player is asked to save."""
    return {"type": "episode_ended", "episode_id": run.id, "index": run.index,
            "steps": run.steps, "return": run.return_, "end_reason": run.end_reason,
            "ended_by": ended_by(run.end_reason),
            "ask_save": True, "ask_outcome": spec.asks_outcome(run.env_id)}  # fmt: skip
