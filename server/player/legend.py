"""The controls legend as a person reads it: every input named as the person knows it (a key
as printed on it, a gamepad's buttons as a gamepad names them), and the bindings gathered
into one row per thing they do, grouped by meaning (move, rotate, the gripper for an arm's
named action dimensions), each device's inputs in the row beside the label."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from server.study_spec.touch import TOUCH_BUTTONS

# Standard-mapping gamepad names (https://w3c.github.io/gamepad/#remapping).
BUTTON_NAMES = {
    0: "A", 1: "B", 2: "X", 3: "Y", 4: "LB", 5: "RB", 6: "LT", 7: "RT", 8: "Back", 9: "Start",
    12: "D-pad up", 13: "D-pad down", 14: "D-pad left", 15: "D-pad right",
}  # fmt: skip
AXIS_NAMES = {0: "left stick", 1: "left stick", 2: "right stick", 3: "right stick"}
AXIS_DIRECTIONS = {0: ("←", "→"), 1: ("↑", "↓"), 2: ("←", "→"), 3: ("↑", "↓")}
# The devices' axes as the player page sends them (docs/study-format.md, "Devices"), and the
# reserved codes their buttons travel as in ``keys``: (device, its name).
DEVICE_AXIS_NAMES = {
    "mouse": ["mouse drag ←→", "mouse drag ↑↓", "mouse wheel", "Shift + mouse drag ←→",
              "Shift + mouse drag ↑↓"],
    "spacemouse": ["SpaceMouse ←→", "SpaceMouse push / pull", "SpaceMouse up / down",
                   "SpaceMouse tilt", "SpaceMouse roll", "SpaceMouse twist"],
    # 0-2 the tilt (or the WebXR turn), 3-5 the WebXR move since the press (web/phone/xr.js)
    "phone": ["phone tilt forward / back", "phone tilt right / left", "phone twist left / right",
              "phone moved right / left", "phone moved away / nearer", "phone moved up / down"],
    # the player's own touch screen (web/player/touchpad.js): two drag pads and its tilt
    "touch": ["pad 1 ←→", "pad 1 ↑↓", "pad 2 ←→", "pad 2 ↑↓", "tilt forward / back",
              "tilt right / left"],
}  # fmt: skip
DEVICE_BUTTONS = {
    "MouseLeft": ("mouse", "left mouse button"), "MouseRight": ("mouse", "right mouse button"),
    "SpaceMouseLeft": ("spacemouse", "SpaceMouse left button"),
    "SpaceMouseRight": ("spacemouse", "SpaceMouse right button"),
    "PhoneClutch": ("phone", "phone clutch"), "PhoneGrip": ("phone", "phone grip"),
    # the touch controls' big buttons (web/player/touchpad.js): "button A" beside touch's own
    **{code: ("touch", f"touch button {code[5:]}") for code in TOUCH_BUTTONS},
}  # fmt: skip
# A device button's name beside the device's own where it is not its name without the
# device's word: the mouse's "right button", the phone page's own buttons (web/phone.html).
_BUTTON_WORDS = {
    "MouseLeft": "left button",
    "MouseRight": "right button",
    "PhoneClutch": "Hold to move",
    "PhoneGrip": "Grip",
}
# The word a device's inputs start with in a list of every device's (dropped beside the
# device's own name: the mouse's "wheel", the SpaceMouse's "left button"); else the device's.
_DEVICE_PREFIX = {"spacemouse": "SpaceMouse "}

# Keys as printed on them (KeyboardEvent.code → the key's face); letters and digits are below.
KEY_NAMES = {
    "ArrowLeft": "←",
    "ArrowRight": "→",
    "ArrowUp": "↑",
    "ArrowDown": "↓",
    "Escape": "Esc",
    "ShiftLeft": "Shift",
    "ShiftRight": "Shift",
    "ControlLeft": "Ctrl",
    "ControlRight": "Ctrl",
    "AltLeft": "Alt",
    "AltRight": "Alt",
    "MetaLeft": "⌘",
    "MetaRight": "⌘",
    "CapsLock": "Caps Lock",
    "PageUp": "Page Up",
    "PageDown": "Page Down",
    "Minus": "-",
    "Equal": "=",
    "BracketLeft": "[",
    "BracketRight": "]",
    "Backslash": "\\",
    "Semicolon": ";",
    "Quote": "'",
    "Backquote": "`",
    "Comma": ",",
    "Period": ".",
    "Slash": "/",
    "NumpadAdd": "Num +",
    "NumpadSubtract": "Num -",
    "NumpadMultiply": "Num *",
    "NumpadDivide": "Num /",
    "NumpadDecimal": "Num .",
    "NumpadEnter": "Num Enter",
}
# Where each key sits on a US keyboard (row, column): a pair of keys is read in that order,
# left before right and upper before lower ("← →", "W S", "Q E").
_KEYBOARD = (
    "Escape F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11 F12",
    "Backquote Digit1 Digit2 Digit3 Digit4 Digit5 Digit6 Digit7 Digit8 Digit9 Digit0 Minus "
    "Equal Backspace",
    "Tab KeyQ KeyW KeyE KeyR KeyT KeyY KeyU KeyI KeyO KeyP BracketLeft BracketRight Backslash",
    "CapsLock KeyA KeyS KeyD KeyF KeyG KeyH KeyJ KeyK KeyL Semicolon Quote Enter",
    "ShiftLeft KeyZ KeyX KeyC KeyV KeyB KeyN KeyM Comma Period Slash ShiftRight",
    "ControlLeft MetaLeft AltLeft Space AltRight MetaRight ControlRight",
    "_ ArrowUp",
    "ArrowLeft ArrowDown ArrowRight",
)
_POSITION = {k: (r, c) for r, row in enumerate(_KEYBOARD) for c, k in enumerate(row.split())}

# The groups an arm's named action dimensions fall in, in the order the legend lists them;
# the rows of anything else are the game's own ("Actions").
DIMENSION_GROUPS = {
    "x": "Move",
    "y": "Move",
    "z": "Move",
    "roll": "Rotate",
    "pitch": "Rotate",
    "yaw": "Rotate",
    "gripper": "Gripper",
}
OTHER_GROUP = "Actions"
_GROUP_ORDER = ("Move", "Rotate", "Gripper", OTHER_GROUP)


def key_name(code: str) -> str:
    """A key as printed on it: ``KeyW`` is ``W``, ``ArrowRight`` ``→``, ``Digit1`` ``1``."""
    if code.startswith("Key") and len(code) == 4:
        return code[3]
    if code.startswith("Digit") and len(code) == 6:
        return code[5]
    if code.startswith("Numpad") and len(code) == 7:
        return f"Num {code[6]}"
    return KEY_NAMES.get(code, code)


def input_name(name: str) -> str:
    """How a player calls a binding: ``button 0`` is ``gamepad A``, ``axis 0-`` ``left stick ←``."""
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
    if name.startswith(tuple(f"{d} axis " for d in DEVICE_AXIS_NAMES)):
        device, _, rest = name.split(" ", 2)
        return f"{axis_name(device, int(rest.rstrip('+-')))} {rest[-1]}"
    return "+".join(DEVICE_BUTTONS.get(part, ("", part))[1] for part in name.split("+"))


def axis_name(source: str, axis: int) -> str:
    """How a player calls an axis: ``left stick ←→``, ``mouse wheel``, ``SpaceMouse tilt``."""
    if source == "gamepad":
        neg, pos = AXIS_DIRECTIONS.get(axis, ("−", "+"))
        return f"{AXIS_NAMES.get(axis, f'gamepad axis {axis}')} {neg}{pos}"
    names = DEVICE_AXIS_NAMES.get(source, [])
    return names[axis] if axis < len(names) else f"{source} axis {axis}"


def _own_words(device: str, name: str) -> str:
    """An input's name beside its device's own: ``mouse wheel`` is the mouse's ``wheel``."""
    if device == "mouse":
        name = name.replace("Shift + mouse drag", "Shift+drag")
    return name.removeprefix(_DEVICE_PREFIX.get(device, f"{device} "))


def _button_words(code: str) -> str:
    """A device button's name beside its device's own (``PhoneGrip``: ``Grip``)."""
    device, name = DEVICE_BUTTONS[code]
    return _BUTTON_WORDS.get(code) or _own_words(device, name)


def binding_input(name: str) -> tuple[str, list[str]]:
    """The device of binding ``name`` and its input in that device's words, one part per key
    or button held together: ``("keyboard", ["↑", "Space"])``, ``("gamepad", ["RT"])``."""
    if name.startswith(("button ", "axis ")):
        return "gamepad", [input_name(name).removeprefix("gamepad ")]
    device = name.split(" ", 1)[0]
    if device in DEVICE_AXIS_NAMES and name.startswith(f"{device} axis "):
        return device, [_own_words(device, input_name(name))]
    parts = name.split("+")
    for part in parts:
        if part in DEVICE_BUTTONS:  # a device's button (with keys held, if any)
            device = DEVICE_BUTTONS[part][0]
            return device, [_button_words(p) if p in DEVICE_BUTTONS else key_name(p) for p in parts]
    return "keyboard", [key_name(p) for p in parts]


def merge_labels(labels: Sequence[str]) -> str:
    """Labels of one row in one: the words they share said once ("hand left" and "hand right"
    are "hand left / right"; "turn left (yaw)" and "turn right (yaw)" "turn left / right
    (yaw)"), else each in turn ("fire / jump")."""
    distinct = list(dict.fromkeys(labels))
    if len(distinct) != 2:
        return " / ".join(distinct)
    a, b = (label.split() for label in distinct)
    start = 0
    while start < min(len(a), len(b)) - 1 and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start - 1 and a[-1 - end] == b[-1 - end]:
        end += 1
    if not start and not end:
        return " / ".join(distinct)
    middle = f"{' '.join(a[start : len(a) - end])} / {' '.join(b[start : len(b) - end])}"
    return " ".join([*a[:start], middle, *a[len(a) - end :]])


class _Input(NamedTuple):
    """One binding in a row: its device, where it sits, its parts, its label (None: none
    given) and the label it has without one."""

    device: str
    at: tuple[int, int]
    parts: list[str]
    label: str | None
    unlabelled: str


class _Row:
    """One meaning: the inputs of each device that do it, and the labels they carry."""

    def __init__(self, kind: str, group: str, order: tuple[int, int], fallback: str) -> None:
        self.kind, self.group, self.order, self.fallback = kind, group, order, fallback
        self.found: list[_Input] = []

    def label(self) -> str:
        """Its keys' labels merged, else another input's label, else the keys' own names for
        the way they push ("x − / +"), else the meaning's name."""
        found = sorted(self.found, key=lambda f: f.at)
        keys = [f for f in found if f.device == "keyboard"]
        for labels in (
            [f.label for f in keys if f.label],
            [f.label for f in found if f.label][:1],
            [f.unlabelled for f in keys if f.unlabelled],
        ):
            if labels:
                return merge_labels(labels)
        return self.fallback

    def public(self) -> dict[str, Any]:
        inputs: dict[str, list[list[str]]] = {}
        for found in sorted(self.found, key=lambda f: f.at):
            inputs.setdefault(found.device, []).append(found.parts)
        return {"label": self.label(), "kind": self.kind, "inputs": inputs}


def _dims_of(value: Any) -> list[int]:
    """The dimensions a vector binding moves (none for a discrete action)."""
    if not isinstance(value, list):
        return []
    return [i for i, v in enumerate(value) if isinstance(v, int | float) and v != 0]


def _position(device: str, name: str, index: int) -> tuple[int, int]:
    """Where a binding of a dimension sits among its row's: keys as on the keyboard (the
    pair's labels are read in that order), the rest as bound."""
    if device == "keyboard":
        return _POSITION.get(name.split("+")[0], (len(_KEYBOARD), index))
    return (0, index)


def legend_groups(info: dict[str, Any], dimensions: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The legend's groups ``[{"name", "rows": [{"label", "kind", "inputs": {device: [[part,
    ...], ...]}}]}]`` from a worker's resolved controls. A vector action's bindings of one
    dimension share a row (``kind`` ``dimension``: its inputs push it one way or the other,
    its keys' labels merged: "hand left / right"), grouped by the dimension's name
    (``dimensions``, the catalog's: x, y, z → Move; roll, pitch, yaw → Rotate; gripper); a
    discrete action's bindings share the row of the action they send (``action``: each input
    does it all), as do a vector's that move several dimensions at once (``vector``)."""
    controls = info.get("controls") or {}
    labels: dict[str, str] = controls.get("labels") or {}
    meanings: list[str] = info.get("action_meanings") or []
    rows: dict[Any, _Row] = {}

    def row(key: Any, group: str, order: tuple[int, int], fallback: str) -> _Row:
        return rows.setdefault(key, _Row(key[0], group, order, fallback))

    def dimension(dim: int) -> _Row:
        name = dimensions[dim] if dim < len(dimensions) else f"dimension {dim}"
        return row(("dimension", dim), DIMENSION_GROUPS.get(name, OTHER_GROUP), (0, dim), name)

    for index, (name, value) in enumerate((controls.get("bindings") or {}).items()):
        device, parts = binding_input(name)
        label = labels.get(name) or labels.get(name.removeprefix("button "))
        own = [labels.get(p) for p in name.split("+")]  # a combo says what its keys do
        unlabelled = " + ".join(p for p in own if p) if "+" in name and all(own) else ""
        dims = _dims_of(value)
        if len(dims) == 1:
            target = dimension(dims[0])
            unlabelled = unlabelled or f"{target.fallback} {'+' if value[dims[0]] > 0 else '−'}"
        elif isinstance(value, int):
            meaning = meanings[value] if 0 <= value < len(meanings) else ""
            fallback = meaning.replace("_", " ").lower() or f"action {value}"
            target = row(("action", value), OTHER_GROUP, (1, index), fallback)
        else:  # several dimensions at once: a row of its own
            target = row(("vector", repr(value)), OTHER_GROUP, (2, index), f"{value}")
        # a dimension's keys push it either way: read as they sit; an action's, as bound
        at = _position(device, name, index) if len(dims) == 1 else (0, index)
        target.found.append(_Input(device, at, parts, label, unlabelled))
    for index, axis in enumerate(controls.get("axes") or []):
        if axis.get("negative") is not None or axis.get("positive") is not None:
            continue  # a discrete axis: its directions are bindings above
        source = axis.get("source", "gamepad")
        key = f"axis {axis['axis']}" if source == "gamepad" else f"{source} {axis['axis']}"
        words = _own_words(source, axis_name(source, axis["axis"]))
        found = _Input(source, (1, index), [words], labels.get(key), "")
        dimension(axis.get("dim", 0)).found.append(found)
    groups: dict[str, list[_Row]] = {}
    for r in sorted(rows.values(), key=lambda r: r.order):
        groups.setdefault(r.group, []).append(r)
    return [
        {"name": name, "rows": [r.public() for r in groups[name]]}
        for name in sorted(groups, key=_GROUP_ORDER.index)
    ]
