"""What the player page shows of a study: names, instructions as safe HTML, controls legend."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

from server.runtime.catalog import default_controls
from server.study_spec import MAX_TOUCH_BUTTONS, EnvironmentSpec, StudySpec

# html disabled: raw HTML in a study's markdown is shown as text, never run.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False})


def render_markdown(text: str) -> str:
    """Safe HTML of a designer's markdown."""
    return _md.render(text or "")


def uses_phone(env: EnvironmentSpec) -> bool:
    """True when the environment's controls read a paired phone (its axes or buttons)."""
    controls = env.controls if env.controls is not None else default_controls(env.source)
    return any(ax.source == "phone" for ax in controls.axes) or any(
        part.startswith("Phone") for combo in controls.keys for part in combo.split("+")
    )


def environment_view(env: EnvironmentSpec, completed: int = 0) -> dict[str, Any]:
    """One environment as the page lists it."""
    return {
        "phone": uses_phone(env),
        "id": env.id,
        "name": env.name,
        "mode": env.mode,
        "fps": env.fps,
        "instructions_html": render_markdown(env.instructions),
        "episodes_per_participant": env.episodes_per_participant,
        "completed": completed,
        "countdown_s": env.countdown_s if env.mode == "async" else 0,
        # async: the speed in force and what the player may pick (empty: fixed)
        "speed": env.speed,
        "speed_choices": env.speed_choices if env.mode == "async" else [],
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
        "environments": [environment_view(e, done.get(e.id, 0)) for e in spec.environments],
    }


# Standard-mapping gamepad names (https://w3c.github.io/gamepad/#remapping).
BUTTON_NAMES = {
    0: "A", 1: "B", 2: "X", 3: "Y", 4: "LB", 5: "RB", 6: "LT", 7: "RT", 8: "Back", 9: "Start",
    12: "D-pad up", 13: "D-pad down", 14: "D-pad left", 15: "D-pad right",
}  # fmt: skip
AXIS_NAMES = {0: "left stick", 1: "left stick", 2: "right stick", 3: "right stick"}
AXIS_DIRECTIONS = {0: ("←", "→"), 1: ("↑", "↓"), 2: ("←", "→"), 3: ("↑", "↓")}


# Device buttons travel as reserved key codes (docs/study-format.md, "Other devices"): no
# keyboard has them, so they get no on-screen button and are not the page's keys.
DEVICE_KEYS = {"PhoneClutch": "phone: Hold to move", "PhoneGrip": "phone: Grip"}
DEVICE_PREFIXES = ("Phone", "Mouse", "SpaceMouse")


def input_name(name: str) -> str:
    """How a player calls a binding: ``button 0`` is ``gamepad A``, ``axis 0-`` ``left stick ←``."""
    if name in DEVICE_KEYS:
        return DEVICE_KEYS[name]
    if name.startswith("button "):
        index = int(name.removeprefix("button "))
        return f"gamepad {BUTTON_NAMES.get(index, f'button {index}')}"
    if name.startswith("axis "):
        rest = name.removeprefix("axis ")
        index = int(rest.rstrip("+-"))
        stick = AXIS_NAMES.get(index, f"axis {index}")
        if rest.endswith(("+", "-")):
            neg, pos = AXIS_DIRECTIONS.get(index, ("−", "+"))
            return f"{stick} {pos if rest.endswith('+') else neg}"
        return stick
    return name


def controls_legend(info: dict[str, Any]) -> dict[str, Any]:
    """Legend rows and the bound browser keys, from a worker's resolved controls."""
    controls = info.get("controls") or {}
    labels: dict[str, str] = controls.get("labels") or {}
    meanings: list[str] = info.get("action_meanings") or []
    rows = []
    keys: set[str] = set()
    pads: list[dict[str, Any]] = []  # on-screen buttons: one per key binding
    for name, value in (controls.get("bindings") or {}).items():
        short = name.removeprefix("button ")
        label = labels.get(name) or labels.get(short)
        if label is None and isinstance(value, int) and 0 <= value < len(meanings):
            label = meanings[value].replace("_", " ").lower()
        rows.append({"input": input_name(name), "label": label or f"action {value}"})
        if not name.startswith(("button ", "axis ", *DEVICE_PREFIXES)):
            parts = [p for p in name.split("+") if p]
            keys.update(parts)
            pads.append({"keys": parts, "input": name, "label": label or f"action {value}"})
    return {"legend": rows, "keys": sorted(keys), "deadzone": controls.get("deadzone", 0.15),
            # a tap sends exactly the keys of its binding; none when too many for a thumb
            "touch": pads if len(pads) <= MAX_TOUCH_BUTTONS else []}  # fmt: skip


def env_ready(env_id: str, info: dict[str, Any], speed: float, quality: str) -> dict[str, Any]:
    """The ``env_ready`` message: mode, cameras, settings and the controls legend."""
    return {"type": "env_ready", "env_id": env_id, "mode": info.get("mode"),
            "fps": info.get("fps"), "cameras": info.get("cameras") or [],
            "camera": info.get("camera"), "speed": speed, "quality": quality,
            "controls": controls_legend(info)}  # fmt: skip
