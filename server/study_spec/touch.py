"""What a touch screen can play of an environment's controls.

A phone or tablet (the study's ``crowd.inputs`` list ``touch``) plays with one of two
things: on-screen buttons, one per key binding, when there are 1 to
:data:`MAX_TOUCH_BUTTONS` of them; or the touch controls (pads, big buttons, the tilt),
where a binding reads the ``touch`` device: an axis of ``source: touch`` or a ``Touch*``
button code in ``keys`` (docs/study-format.md, "Touch"). An environment that has neither
cannot be played by touch, and a participant on a phone is told so before consent.
"""

from __future__ import annotations

from server.study_spec.controls import Controls
from server.study_spec.crowd import MAX_TOUCH_BUTTONS

# The touch controls' big buttons, as reserved codes in ``keys`` (like MouseLeft, PhoneGrip).
TOUCH_BUTTONS = ("TouchA", "TouchB", "TouchC", "TouchD")
# Device buttons sit among key names; no KeyboardEvent.code starts like these, and a
# device's button gets no on-screen key button.
DEVICE_PREFIXES = ("Mouse", "SpaceMouse", "Phone", "Touch")


def key_buttons(controls: Controls) -> list[str]:
    """The key bindings a touch screen could get a button for (those without device
    buttons)."""
    return [
        name
        for name in controls.keys
        if not any(part.startswith(DEVICE_PREFIXES) for part in name.split("+") if part)
    ]


def reads_touch(controls: Controls) -> bool:
    """True when a binding reads the touch controls (a ``touch`` axis or a Touch button)."""
    return any(ax.source == "touch" for ax in controls.axes) or any(
        part in TOUCH_BUTTONS for combo in controls.keys for part in combo.split("+")
    )


def playable_by_touch(controls: Controls) -> bool:
    """True when a touch screen reaches the actions: touch controls, or 1 to
    :data:`MAX_TOUCH_BUTTONS` key bindings as buttons."""
    return reads_touch(controls) or 0 < len(key_buttons(controls)) <= MAX_TOUCH_BUTTONS
