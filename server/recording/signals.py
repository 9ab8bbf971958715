"""Quality signals of an episode from its inputs and latencies: pure functions that live play
(counting as the actions happen, :mod:`server.player`) and review (from the recorded log,
:mod:`server.services.review.quality`) share; docs/review.md names the signals.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PRESSED = 0.5  # a gamepad button counts as pressed above this value (as input_mapping)
DEVICE_PUSHED = 0.15  # a device axis counts as pushed past this (the default dead zone)


def parse_json(text: Any, default: Any = None) -> Any:
    """Recorded JSON text (``input``, ``info``, ``timing``) as data; ``default`` if unreadable."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def pressed(raw: Any) -> list[str]:
    """The input names held in a raw input: ``ArrowLeft``, ``button 0``, ``axis 0+``."""
    if not isinstance(raw, dict):
        return []
    names = [k for k in raw.get("keys") or [] if isinstance(k, str)]
    buttons = raw.get("buttons") or {}
    if isinstance(buttons, dict):
        for index, value in buttons.items():
            if isinstance(value, int | float) and value > PRESSED:
                names.append(f"button {index}")
    axes = raw.get("axes") or []
    if isinstance(axes, list):
        for index, value in enumerate(axes):
            if isinstance(value, int | float) and abs(value) > 0.5:
                names.append(f"axis {index}{'+' if value > 0 else '-'}")
    devices = raw.get("devices") or {}
    for device, values in devices.items() if isinstance(devices, dict) else ():
        for index, value in enumerate(values if isinstance(values, list) else []):
            # a mouse or SpaceMouse rests at 0: any push past the default dead zone is input
            if isinstance(value, int | float) and abs(value) > DEVICE_PUSHED:
                names.append(f"{device} axis {index}{'+' if value > 0 else '-'}")
    return names


@dataclass
class InputCounts:
    """What the held input was at each action, counted as the actions happen (the player
    session keeps one per episode, so ending an episode never re-reads its log)."""

    actions: int = 0
    idle: int = 0  # actions taken with nothing held
    presses: int = 0  # controls newly held since the previous action
    held: frozenset[str] = frozenset()  # what the previous action held
    # shared autonomy: actions each drove, takeovers from a working policy
    human_driven: int = 0
    policy_driven: int = 0
    takeovers: int = 0

    def drove(self, policy: bool, takeovers: int) -> None:
        """One more action under shared autonomy, by the policy or the player."""
        if policy:
            self.policy_driven += 1
        else:
            self.human_driven += 1
        self.takeovers = max(self.takeovers, takeovers)

    def add(self, held: frozenset[str], actions: int = 1) -> None:
        """``actions`` more actions, all taken with ``held``."""
        if actions <= 0:
            return
        self.actions += actions
        self.idle += actions if not held else 0
        self.presses += len(held - self.held)
        self.held = held

    def signals(self, latencies_ms: Sequence[float], duration_s: float | None) -> Signals:
        """The episode's signals from these counts."""
        per_s = self.presses / duration_s if duration_s and duration_s > 0 else None
        driven = self.human_driven + self.policy_driven
        return Signals(
            interventions=self.takeovers if driven else None,
            intervention_share=self.human_driven / driven if driven else None,
            idle_share=self.idle / self.actions if self.actions else None,
            inputs_per_s=per_s,
            latency_p50_ms=percentile(latencies_ms, 50),
            latency_p95_ms=percentile(latencies_ms, 95),
            latency_p99_ms=percentile(latencies_ms, 99),
        )


def held_controls(raw: Any) -> frozenset[str]:
    """The controls a raw input (data or recorded JSON text) holds."""
    return frozenset(pressed(parse_json(raw) if isinstance(raw, str | bytes) else raw))


@dataclass(frozen=True)
class Signals:
    """What :func:`from_steps` measures of one episode."""

    idle_share: float | None
    inputs_per_s: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    interventions: int | None = None
    intervention_share: float | None = None

    def columns(self) -> dict[str, float | None]:
        """The episode columns these signals fill (names are the fields' own)."""
        return dataclasses.asdict(self)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` percentile (0-100, linear interpolation) or None without values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
