"""Latched presses: in async mode a key or button pressed since the last step counts for the
next step, even when it was released before the clock's tick."""

from __future__ import annotations

from typing import Any

from server.runtime import _input_raw as read


class Presses:
    """Latched presses (async mode): a key or gamepad button that went down since the last
    step counts as pressed for the next step, even when it came up again before the tick.

    The clock applies the input held at its tick, so without this a tap that starts and ends
    between two ticks (a quick Space in Breakout, a touch tap, a mashed button) would reach no
    step. A press is carried into one step only: the step after it applies whatever is held
    then. The step's recorded input lists what the latch added under ``latched``
    (docs/protocol.md, "Every press reaches a step").
    """

    def __init__(self) -> None:
        self.keys: list[str] = []  # in press order
        self.buttons: dict[int, float] = {}  # index -> the value it was pressed with

    def clear(self) -> None:
        self.keys, self.buttons = [], {}

    def note(self, before: Any, after: Any) -> None:
        """An input replaces ``before``: latch what it presses that ``before`` did not."""
        was_down = set(read.keys(before))
        for key in read.keys(after):
            if key not in was_down and key not in self.keys and len(self.keys) < read.MAX_KEYS:
                self.keys.append(key)
        buttons_down = {i for i, v in read.buttons(before).items() if v > read.PRESSED}
        for i, value in read.buttons(after).items():
            if value > read.PRESSED and i not in buttons_down:
                self.buttons[i] = max(value, self.buttons.get(i, 0.0))

    def apply(self, held: Any) -> Any:
        """The input the next step applies: ``held`` plus the presses already released (the
        same object when nothing was); the latch is then empty."""
        if not self.keys and not self.buttons:
            return held
        keys = read.keys(held)
        released = [k for k in self.keys if k not in keys][: read.MAX_KEYS - len(keys)]
        buttons = read.buttons(held)
        up = {i: v for i, v in self.buttons.items() if buttons.get(i, 0.0) <= read.PRESSED}
        self.clear()
        if not released and not up:
            return held
        merged = dict(held) if isinstance(held, dict) else {"axes": [], "devices": {}}
        merged["keys"] = keys + released
        merged["buttons"] = {str(i): v for i, v in {**buttons, **up}.items()}
        merged["latched"] = released + [f"button:{i}" for i in up]
        return merged
