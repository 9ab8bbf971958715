"""What a replay shows of one recorded step: observation summary, action meaning, latency.

Action meanings are not in the log: the worker knows them (``EnvWorker.info``) but records
only the environment spec (``env_config``). The replay names an action by the control that
produced it - the binding the recorded raw input pressed (Atari controls are named by
meaning, ``"FIRE"``; others carry legend labels, ``"left"``) - or, for discrete actions
recorded without input, by the labelled binding with that action value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simplejpeg
from pydantic import ValidationError

from server.recording.signals import parse_json, pressed
from server.runtime.catalog import default_controls
from server.study_spec import Controls, EnvironmentSpec

INLINE_VALUES = 64  # larger arrays are summarised (min/max/mean) with a way to expand


def controls_of(env_config: str | None) -> Controls:
    """The controls the episode was played with (the spec's own, else the catalog's)."""
    try:
        spec = EnvironmentSpec.model_validate_json(env_config or "")
    except ValidationError:
        return Controls()
    return spec.controls or default_controls(spec.source)


def _leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k in value for leaf in _leaves(value[k], f"{prefix}{k}/")]
    if isinstance(value, list | tuple):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{prefix}{i}/")]
    return [(prefix.rstrip("/"), value)]


def observation_leaf(observation: Any, key: str) -> np.ndarray | None:
    """One array of a (nested) observation by its ``a/b`` key ("" for a plain array)."""
    for name, value in _leaves(observation):
        if name == key:
            return np.asarray(value)
    return None


def is_image(array: np.ndarray) -> bool:
    """An observation drawn as a picture: uint8 H×W or H×W×{1,3,4}, at least 8×8."""
    shape = array.shape
    colour = array.ndim == 3 and shape[2] in (1, 3, 4)
    return array.dtype == np.uint8 and (array.ndim == 2 or colour) and min(shape[:2]) >= 8


def first_image(observation: Any) -> np.ndarray | None:
    """The first array of a (nested) observation that is drawn as a picture."""
    for _, value in _leaves(observation):
        array = np.asarray(value)
        if is_image(array):
            return array
    return None


def image_jpeg(array: np.ndarray, quality: int = 90) -> bytes:
    """JPEG bytes of an image observation (grey, RGB or RGBA)."""
    if array.ndim == 2 or array.shape[2] == 1:
        grey = np.ascontiguousarray(array.reshape(array.shape[0], array.shape[1], 1))
        return bytes(simplejpeg.encode_jpeg(grey, quality=quality, colorspace="GRAY"))
    space = "RGB" if array.shape[2] == 3 else "RGBA"
    return bytes(simplejpeg.encode_jpeg(np.ascontiguousarray(array), quality, space))


def _number(value: Any) -> Any:
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)  # JSON has no NaN / inf
    return value


def describe_observation(observation: Any) -> list[dict[str, Any]]:
    """Each observation array: name, shape, dtype and its values, or a summary when large."""
    out = []
    for name, value in _leaves(observation):
        array = np.asarray(value)
        item: dict[str, Any] = {
            "name": name or "observation",
            "key": name,
            "shape": list(array.shape),
            "dtype": str(array.dtype),
            "size": int(array.size),
            "image": is_image(array),
        }
        if array.size <= INLINE_VALUES and array.dtype.kind in "biuf":
            item["values"] = [_number(v) for v in array.reshape(-1)]
        elif array.size and array.dtype.kind in "biuf":
            item["summary"] = {
                "min": _number(array.min()),
                "max": _number(array.max()),
                "mean": _number(float(array.mean())),
            }
        else:
            item["values"] = [str(v) for v in array.reshape(-1)[:INLINE_VALUES]]
        out.append(item)
    return out


def full_values(array: np.ndarray) -> list[Any]:
    """Every value of one observation array, flattened (shape is given beside it)."""
    return [_number(v) for v in array.reshape(-1)]


def _bindings(controls: Controls) -> list[tuple[frozenset[str], str, Any]]:
    """(parts, name, value) of every key, button and discrete axis binding."""
    out: list[tuple[frozenset[str], str, Any]] = []
    for combo, value in controls.keys.items():
        out.append((frozenset(p for p in combo.split("+") if p), combo, value))
    for button, value in controls.buttons.items():
        out.append((frozenset({f"button {button}"}), f"button {button}", value))
    for ax in controls.axes:
        for sign, bound in (("-", ax.negative), ("+", ax.positive)):
            if bound is not None:
                out.append((frozenset({f"axis {ax.axis}{sign}"}), f"axis {ax.axis}{sign}", bound))
    return out


def _label(controls: Controls, name: str, value: Any) -> str | None:
    label = controls.labels.get(name) or controls.labels.get(name.removeprefix("button "))
    if label:
        return label
    return value if isinstance(value, str) else None


def action_meaning(controls: Controls, raw: Any, action: Any) -> str | None:
    """What the action meant: the label of the control the player held, else of the action."""
    held = set(pressed(raw))
    best: tuple[int, str, Any] | None = None
    for parts, name, value in _bindings(controls):
        if parts and parts <= held and (best is None or len(parts) > best[0]):
            best = (len(parts), name, value)
    if best is not None:
        return _label(controls, best[1], best[2])
    if isinstance(action, int | np.integer) and not isinstance(action, bool):
        for _, name, value in _bindings(controls):
            if value == int(action) and not isinstance(value, bool):
                label = _label(controls, name, value)
                if label:
                    return label
    if raw is not None and not held:
        # the noop was sent: named by the game when it names its actions (Atari's NOOP)
        noop = controls.noop
        return f"{noop} (no input)" if isinstance(noop, str) else "no input (noop)"
    return None


def frame_drawn_times(timings: list[dict[str, Any]]) -> dict[int, float]:
    """Step index -> time its frame was drawn, from the ``acks`` of timing records."""
    drawn: dict[int, float] = {}
    for record in timings:
        for ack in record.get("acks") or []:
            if isinstance(ack, list) and len(ack) == 3:
                index, value = ack[0], ack[2]
                numeric = isinstance(value, int | float) and not isinstance(value, bool)
                if isinstance(index, int) and numeric and np.isfinite(value):
                    drawn[index] = float(value)
    return drawn


def finite(value: Any) -> float | None:
    """A recorded number, or None when absent, not a number, NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if np.isfinite(value) else None


def latency_note(sent: Any, drawn: float | None) -> str | None:
    """Why a step has no input latency (None when it has one)."""
    if not isinstance(sent, int | float) or isinstance(sent, bool):
        return (
            "no new input produced this step (latency is measured from an input to the "
            "frame it produced; in real time the game steps on with the held keys)"
        )
    if drawn is None:
        return "the browser did not report drawing this step's frame (dropped, or not acknowledged)"
    if input_latency(sent, drawn) is None:
        return "the browser's clock readings for this step do not agree"
    return None


def input_latency(sent: Any, drawn: float | None) -> float | None:
    """From sending an input to drawing the frame it produced (client clock), in ms."""
    if not isinstance(sent, int | float) or isinstance(sent, bool) or drawn is None:
        return None
    latency = drawn - float(sent)
    return round(latency, 1) if np.isfinite(latency) and latency >= 0 else None


def control_source(text: Any) -> int:
    """Who chose a recorded action: 1 the policy, 0 the player, -1 no policy (its record's
    ``source``; ``server/recording/format.py``)."""
    record = parse_json(text) if isinstance(text, str | bytes) and text != "null" else None
    if not isinstance(record, dict):
        return -1
    return {"policy": 1, "human": 0}.get(record.get("source"), -1)  # type: ignore[arg-type]
