"""Per-step columns every format writes alike, with their values checked: numbers that fit their
dtype (naming the step and the field), the timing fields and the shared-autonomy columns."""

from __future__ import annotations

from typing import Any

import numpy as np

from server.export.episode import HUMAN, RldsEpisode
from server.export.errors import ExportError, ValueOutOfRangeError
from server.export.timings import TIMING_FLOAT_KEYS, TIMING_KEYS


def check_range(values: np.ndarray, dtype: Any, where: str) -> None:
    """Raise, naming the step (axis 0) and ``where``, if ``values`` hold a number ``dtype``
    cannot represent: an integer out of range, a NaN, infinite or fractional value for an
    integer dtype, or a finite float too large for a float dtype."""
    target = np.dtype(dtype)
    if target.kind not in "iuf" or values.size == 0:
        return
    if values.dtype.kind in "iubf" and np.can_cast(values.dtype, target):
        return  # every value of the recorded dtype fits (e.g. uint8 images): no pass needed
    rows = values.reshape(len(values), -1)  # one row per step
    with np.errstate(invalid="ignore", over="ignore"):
        if target.kind == "f":
            if rows.dtype.kind != "f":
                return  # integers become floats (rounded, never out of range)
            bad = np.isfinite(rows) & (np.abs(rows) > np.finfo(target).max)
        else:
            info = np.iinfo(target)
            bad = (rows < info.min) | (rows > info.max)
            if rows.dtype.kind == "f":
                bad |= ~np.isfinite(rows) | (rows != np.round(rows))
    if bad.any():
        step, column = (int(i) for i in np.argwhere(bad)[0])
        raise ValueOutOfRangeError(
            f"step {step}, field {where}: {_why(rows[step, column].item(), target)}"
        )


def _why(value: Any, target: np.dtype) -> str:
    if isinstance(value, float) and not np.isfinite(value):
        return f"{value} is not a finite number ({target} field)"
    if target.kind in "iu" and isinstance(value, float) and value != round(value):
        return f"{value} is fractional for an integer ({target}) field"
    limits = np.iinfo(target) if target.kind in "iu" else np.finfo(target)
    return f"value {value} does not fit {target} [{limits.min}, {limits.max}]"


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"


def int64_column(values: list[Any], where: str) -> list[int]:
    """Per-step int64 values (timing fields); raise naming the step that is not one."""
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    for step, value in enumerate(values):
        if not (isinstance(value, int) and low <= value <= high):
            raise ValueOutOfRangeError(
                f"step {step}, field {where}: {_short(value)} is not a finite integer within int64"
            )
    return values


def timing_column(timings: list[dict[str, int | float]], key: str) -> np.ndarray:
    """One timing field over the steps: int64 (:data:`TIMING_KEYS`, checked, naming the step
    that is not one) or float64 (:data:`TIMING_FLOAT_KEYS`)."""
    if key in TIMING_FLOAT_KEYS:
        return np.asarray([t[key] for t in timings], dtype=np.float64)
    if key not in TIMING_KEYS:
        raise ExportError(f"no timing field {key!r}")
    values = int64_column([t.get(key, -1) for t in timings], f"timing/{key}")
    return np.asarray(values, dtype=np.int64)


def control_values(episode: RldsEpisode, name: str) -> np.ndarray:
    """A per-step shared-autonomy column: ``source`` (int8), ``is_intervention`` (float32, 1
    where the player drove) or ``has_policy_action`` (bool)."""
    sources = np.asarray(episode.control_sources, dtype=np.int8)
    if name == "source":
        return sources
    if name == "is_intervention":
        return (sources == HUMAN).astype(np.float32)
    if name == "has_policy_action":
        return np.asarray(episode.has_policy_action, dtype=bool)
    raise ExportError(f"no control field {name!r}")
