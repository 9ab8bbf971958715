"""Reading one raw input message defensively: keys, gamepad buttons, and the axes of each
source (the gamepad's ``axes``, a device's list under ``devices``). Anything malformed reads
as nothing: NaN and non-numbers are 0, values are clamped to their range, lists are cut to
their limits. The protocol already refuses such input from a browser; the worker is strict
anyway because it also maps inputs replayed from recordings.
"""

from __future__ import annotations

import math
from typing import Any

from server.study_spec.controls import DEVICE_AXES

MAX_KEYS = 32
MAX_AXES = 16
PRESSED = 0.5  # a gamepad button counts as pressed above this value


def number(value: Any) -> float:
    """A finite float, else 0."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return 0.0


def keys(raw: Any) -> list[str]:
    """The key codes held (device buttons included: ``MouseLeft``), in press order."""
    held = raw.get("keys") if isinstance(raw, dict) else None
    if not isinstance(held, list | tuple):
        return []
    return [k for k in held[:MAX_KEYS] if isinstance(k, str) and len(k) <= 64]


def buttons(raw: Any) -> dict[int, float]:
    """Gamepad button values in [0, 1] by index (JSON's string indices read as ints)."""
    pads = raw.get("buttons") if isinstance(raw, dict) else None
    if isinstance(pads, list):
        pads = dict(enumerate(pads))
    if not isinstance(pads, dict):
        return {}
    out: dict[int, float] = {}
    for index, value in list(pads.items())[:MAX_KEYS]:
        try:
            i = int(index)
        except (TypeError, ValueError):
            continue
        out[i] = max(0.0, min(1.0, number(value)))
    return out


def _clamped(values: Any, limit: int) -> list[float]:
    if not isinstance(values, list | tuple):
        return []
    return [max(-1.0, min(1.0, number(v))) for v in values[:limit]]


def axes(raw: Any, source: str = "gamepad") -> list[float]:
    """The axis values of ``source`` clamped to [-1, 1]: the gamepad's ``axes`` or a
    device's list under ``devices``."""
    if not isinstance(raw, dict):
        return []
    if source == "gamepad":
        return _clamped(raw.get("axes"), MAX_AXES)
    devices = raw.get("devices")
    return _clamped(devices.get(source) if isinstance(devices, dict) else None, DEVICE_AXES)
