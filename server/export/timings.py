"""A step's timing as the worker stamped it (the ``timing`` step metadata:
server/recording/format.py), read leniently and realigned to RLDS steps: the times of
action a_t arrive with timestep t+1, the frame acknowledgements name the steps whose frames
they are, and what the worker recorded about o_t itself (its frame's JPEG quality, the
clock's speed, the camera) stays with it (server/export/episode.py realigns the rest).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

UNKNOWN = -1
# A step recorded without a speed (sync mode, or a log from before speeds were recorded)
# ran at the environment's own fps.
DEFAULT_SPEED = 1.0
# The int64 timing fields (-1 unknown): times in ms, the step on screen, the frame's JPEG
# quality.
TIMING_KEYS = (
    "input_sent_ms",
    "input_recv_ms",
    "applied_ms",
    "seen_step",
    "frame_sent_ms",
    "frame_drawn_ms",
    "input_latency_ms",
    "jpeg_quality",
)
# The float64 timing fields: the clock's speed factor in force (1 = the environment's fps).
TIMING_FLOAT_KEYS = ("speed",)


def step_timing(step: Any) -> dict[str, Any]:
    """A step's ``timing`` record (what the worker stamped), {} when it has none."""
    data = step.custom_data or {}
    text = data.get("timing")
    if not text:
        return {}
    parsed = json.loads(text)
    return parsed if isinstance(parsed, dict) else {}


def _int_or_unknown(value: Any) -> int | float:
    """A recorded number as an int (-1 when absent or not a number); a float no int64 holds
    (NaN, infinite, huge) is kept as it is, for the encoder to name."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return UNKNOWN
    if isinstance(value, float) and not -(2**63) <= value < 2**63:
        return value
    return int(value)


def time_or_unknown(value: Any) -> float:
    """A recorded time in ms (-1.0 when absent or not a finite number)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
        return float(value)
    return float(UNKNOWN)


def speed_or_default(value: Any) -> float:
    """A recorded speed factor (:data:`DEFAULT_SPEED` when none was recorded)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return DEFAULT_SPEED


def camera_or_none(value: Any) -> str:
    """A recorded camera name ("" when none was recorded)."""
    return value if isinstance(value, str) else ""


def _step_index(value: Any, n: int) -> int | None:
    """An ack's step index when it is one of the ``n`` steps (acks for no step are ignored)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n:
        return value
    return None


def realign_timings(raw: list[dict[str, Any]]) -> list[dict[str, int | float]]:
    """Per-step timing from per-timestep records (``raw[t]`` was recorded with o_t).

    The times of action a_t arrive with timestep t+1; ``acks`` give each step's frame
    sent/drawn times; the input latency is from the input's sending to the drawing of the
    frame it produced (both client clocks). ``jpeg_quality`` and ``speed`` are o_t's own.
    """
    n = len(raw)
    frame_times: dict[int, tuple[int | float, int | float]] = {}
    for record in raw:
        for ack in record.get("acks") or []:
            if isinstance(ack, list | tuple) and len(ack) == 3:
                index = _step_index(ack[0], n)
                if index is not None:
                    frame_times[index] = (_int_or_unknown(ack[1]), _int_or_unknown(ack[2]))
    out: list[dict[str, int | float]] = []
    for t in range(n):
        action = raw[t + 1] if t + 1 < n else {}
        sent, drawn = frame_times.get(t, (UNKNOWN, UNKNOWN))
        timing = {
            "input_sent_ms": _int_or_unknown(action.get("input_sent")),
            "input_recv_ms": _int_or_unknown(action.get("input_recv")),
            "applied_ms": _int_or_unknown(action.get("applied")),
            "seen_step": _int_or_unknown(action.get("seen_step")),
            "frame_sent_ms": sent,
            "frame_drawn_ms": drawn,
            "input_latency_ms": UNKNOWN,
            "jpeg_quality": _int_or_unknown(raw[t].get("jpeg_quality")),
            "speed": speed_or_default(raw[t].get("speed")),
        }
        next_drawn = frame_times.get(t + 1, (UNKNOWN, UNKNOWN))[1]
        input_sent = timing["input_sent_ms"]
        known = isinstance(input_sent, int) and isinstance(next_drawn, int)
        if known and UNKNOWN not in (input_sent, next_drawn):
            timing["input_latency_ms"] = next_drawn - input_sent
        out.append(timing)
    return out
