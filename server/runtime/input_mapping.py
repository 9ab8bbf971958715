"""Browser input → environment action.

Input is what the player page sends: ``{"keys": [KeyboardEvent.code, ...], "buttons":
{index: value}, "axes": [float, ...], "devices": {"mouse" | "spacemouse" | "phone": [float,
...]}}`` (device buttons ride in ``keys`` as reserved codes such as ``MouseLeft``).
:class:`ActionMapper` turns it into an action of the environment's dm_env action spec:

- scalar integer spec (Gymnasium ``Discrete``): the *most specific* active binding wins - a
  ``+`` combo such as ``ArrowUp+Space`` beats ``ArrowUp`` when both keys are held; ties go to
  the binding whose keys were pressed last (later in ``keys``). Values may be action
  indices or, for envs that name their actions (Atari), action meanings such as ``"FIRE"``.
- anything else (Box, MultiDiscrete, MultiBinary, Dict, Tuple): the action is the flattened
  vector of all leaves; active key/button bindings add their vectors to the noop vector
  (a binding covered by an active combo is skipped); buttons listed in ``analog`` add their
  vector scaled by the button's value (a trigger) outside the controls' dead zone; axes - of
  the gamepad or of the device their ``source`` names - add ``value * scale`` to their
  ``dim`` outside the dead zone (the axis's own ``deadzone``, else the controls'); key
  bindings named in ``toggle`` latch instead: a press turns them on until the next press (the
  mapper keeps that state: :meth:`ActionMapper.reset` at each episode's start). The result
  is clipped to the designer's ``clamp`` and to the bounds, and rounded for integer leaves.

Nothing pressed gives the noop. Malformed input (unknown keys, NaN, wrong types, out of
range values) is ignored or clamped; mapping never raises. Bindings that fit no action are
dropped and listed in :attr:`ActionMapper.issues` with their field path inside ``controls``
(study validation refuses them, see ``server/runtime/probe.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from server.runtime import _input_raw as read
from server.runtime.action_spec import flat_leaves, leaf_bounds, unflatten
from server.study_spec import Controls
from server.study_spec.controls import DEVICE_AXES

_UNSET = object()  # no input mapped yet


@dataclass(frozen=True)
class _Binding:
    parts: frozenset[str]
    value: Any  # int (discrete) or np.ndarray (vector)
    name: str


class ActionMapper:
    """Maps sanitized browser input to actions of ``action_spec`` under ``controls``."""

    def __init__(
        self,
        action_spec: Any,
        controls: Controls,
        meanings: list[str] | None = None,
        *,
        strict: bool = False,
    ) -> None:
        self.spec = action_spec
        self.controls = controls
        self.meanings = meanings or []
        # strict: the designer's own controls, where an action name this env lacks is a
        # mistake; the catalog's generic controls name actions some games lack on purpose.
        self.strict = strict
        self.issues: list[tuple[tuple[str | int, ...], str]] = []  # (field path, message)
        self.unused: dict[str, Any] = {}  # generic bindings naming actions this env lacks
        leaves = flat_leaves(action_spec)
        self.discrete = (
            len(leaves) == 1
            and leaves[0] is action_spec
            and action_spec.shape == ()
            and np.issubdtype(np.dtype(action_spec.dtype), np.integer)
        )
        self._leaves = leaves
        los, his = zip(*(leaf_bounds(leaf) for leaf in leaves), strict=True)
        self.low = np.concatenate(los)
        self.high = np.concatenate(his)
        self.size = self.low.size
        self._integer = np.concatenate(
            [
                np.full(int(np.prod(leaf.shape)), np.issubdtype(np.dtype(leaf.dtype), np.integer))
                for leaf in leaves
            ]
        )
        self.bindings: list[_Binding] = []
        for combo, value in controls.keys.items():
            parts = frozenset(p for p in combo.split("+") if p)
            self._bind(parts, value, combo, ("keys", combo))
        for button, value in controls.buttons.items():
            self._bind(frozenset({f"button:{button}"}), value, f"button {button}",
                       ("buttons", button))  # fmt: skip
        for i, ax in enumerate(controls.axes):
            if ax.source != "gamepad" and ax.axis >= DEVICE_AXES:
                self._problem(
                    ("axes", i, "axis"),
                    f"{ax.source} axis {ax.axis} out of range "
                    f"(a device sends at most {DEVICE_AXES} axes: 0..{DEVICE_AXES - 1})",
                )
            elif self.discrete:
                for sign, field, bound in (("-", "negative", ax.negative),
                                           ("+", "positive", ax.positive)):  # fmt: skip
                    if bound is not None:
                        self._bind(frozenset({_axis_token(ax.source, ax.axis, sign)}), bound,
                                   _axis_name(ax.source, ax.axis, sign),
                                   ("axes", i, field))  # fmt: skip
            elif ax.dim >= self.size:
                self._problem(("axes", i, "dim"), f"axis {ax.axis}: dim {ax.dim} out of range "
                              f"(the action has {self.size} dimensions)")  # fmt: skip
        self.noop = self._noop()
        self.toggles = self._toggles()
        self.analog = self._analog()
        self._devices = sorted({ax.source for ax in controls.axes} - {"gamepad"})
        # the latch each toggle binding shares with every other of the same vector
        self._groups = {b.name: repr(np.asarray(b.value).tolist())
                        for b in self.bindings if b.name in self.toggles}  # fmt: skip
        self.clamp_low, self.clamp_high = self._clamp()
        self._latched: set[str] = set()  # toggles on (by their vector)
        self._toggle_held: set[str] = set()  # toggles whose keys were down at the last call
        # a discrete action is a function of the input alone: the last one, for the async
        # clock's steps that apply the same held input again (60 a second)
        self._last: tuple[Any, Any] = (_UNSET, None)

    def reset(self) -> None:
        """Every toggle off (a new episode starts from the noop)."""
        self._latched.clear()
        self._toggle_held.clear()

    def _toggles(self) -> set[str]:
        names = set()
        bound = {b.name for b in self.bindings}
        for i, name in enumerate(self.controls.toggle):
            if self.discrete:
                self._problem(("toggle", i), f"toggle {name!r}: toggles latch a vector "
                              "action's dimensions; this action is discrete")  # fmt: skip
            elif name not in self.controls.keys:
                self._problem(("toggle", i), f"toggle {name!r} is not a key of 'keys'")
            elif name in bound:
                names.add(name)
        return names

    def _analog(self) -> set[str]:
        """Names of the button bindings read as analog (``controls.analog``)."""
        names = set()
        bound = {b.name for b in self.bindings}
        for i, button in enumerate(self.controls.analog):
            if self.discrete:
                self._problem(("analog", i), f"analog button {button}: analog buttons scale a "
                              "vector action; this action is discrete")  # fmt: skip
            elif button not in self.controls.buttons:
                self._problem(("analog", i), f"analog button {button} is not a button of "
                              "'buttons'")  # fmt: skip
            elif f"button {button}" in bound:
                names.add(f"button {button}")
        return names

    def _clamp(self) -> tuple[np.ndarray, np.ndarray]:
        """The action's bounds narrowed by ``controls.clamp`` (where that fits)."""
        clamp = self.controls.clamp
        if clamp is None or self.discrete:
            if clamp is not None:
                self._problem(("clamp",), "clamp bounds a vector action; this one is discrete")
            return self.low, self.high
        if len(clamp) != self.size:
            self._problem(("clamp",), f"clamp has {len(clamp)} [low, high] pairs: the action "
                          f"has {self.size} dimensions")  # fmt: skip
            return self.low, self.high
        lo = np.array([pair[0] for pair in clamp], dtype=np.float64)
        hi = np.array([pair[1] for pair in clamp], dtype=np.float64)
        low, high = np.maximum(self.low, lo), np.minimum(self.high, hi)
        for dim in np.flatnonzero(low > high):
            self._problem(("clamp", int(dim)), f"clamp {clamp[dim]} of dimension {dim} is "
                          f"empty within the action's bounds [{self.low[dim]}, "
                          f"{self.high[dim]}]")  # fmt: skip
        return np.where(low > high, self.low, low), np.where(low > high, self.high, high)

    def _deadzone(self, axis: int, source: str = "gamepad") -> float:
        """The dead zone of ``source``'s axis ``axis`` (its bindings' own, else the
        controls')."""
        for ax in self.controls.axes:
            if ax.axis == axis and ax.source == source and ax.deadzone is not None:
                return ax.deadzone
        return self.controls.deadzone

    @property
    def problems(self) -> list[str]:
        """The messages of :attr:`issues`: bindings that do not fit and were dropped."""
        return [message for _, message in self.issues]

    def _problem(self, loc: tuple[str | int, ...], message: str) -> None:
        self.issues.append((loc, message))

    def _misfit(self, value: Any) -> str:
        """Why ``value`` is no action here, naming what would be."""
        if not self.discrete:
            return f"{value!r} does not fit the action: use a list of {self.size} numbers"
        lo, hi = int(self.low[0]), int(self.high[0])
        names = f" or one of {self.meanings}" if self.meanings else ""
        return f"{value!r} is not an action of this environment: use {lo}..{hi}{names}"

    # -- construction -----------------------------------------------------------------------
    def _convert(self, value: Any) -> Any:
        """A control value as an action index / vector, or None when invalid here."""
        if self.discrete:
            if isinstance(value, str):
                if value in self.meanings:
                    return self.meanings.index(value) + int(self.low[0])
                if not value.lstrip("-").isdigit():
                    return None
                value = int(value)
            if isinstance(value, bool | list) or not float(value).is_integer():
                return None
            ok = self.low[0] <= value <= self.high[0]
            return int(value) if ok else None
        if isinstance(value, str):
            return None
        vec = np.asarray(value, dtype=np.float64).reshape(-1)
        if vec.size == 1 and self.size > 1:
            return None
        if vec.size != self.size or not np.all(np.isfinite(vec)):
            return None
        return vec

    def _bind(self, parts: frozenset[str], value: Any, name: str, loc: tuple) -> None:
        if not parts:
            self._problem(loc, f"control {name!r} names no key")
            return
        generic = self.discrete and isinstance(value, str) and value.isupper() and self.meanings
        if generic and not self.strict and value not in self.meanings:
            self.unused[name] = value  # the catalog's generic controls name actions it lacks
            return
        converted = self._convert(value)
        if converted is None:
            self._problem(loc, f"control {name!r}: {self._misfit(value)}")
            return
        self.bindings.append(_Binding(parts, converted, name))

    def _noop(self) -> Any:
        if self.controls.noop is not None:
            converted = self._convert(self.controls.noop)
            if converted is not None:
                return converted
            self._problem(("noop",), f"noop: {self._misfit(self.controls.noop)}")
        if self.discrete:
            return int(np.clip(0, self.low[0], self.high[0]))
        return np.clip(np.zeros(self.size), self.low, self.high)

    # -- mapping ------------------------------------------------------------------------
    def pressed(self, raw: Any) -> list[str]:
        """Active input tokens in press order (keys, ``button:i``, ``axis:i±`` and
        ``<device>:i±`` past their dead zones)."""
        tokens = read.keys(raw)
        tokens += [f"button:{i}" for i, v in read.buttons(raw).items() if v > read.PRESSED]
        for i, value in enumerate(read.axes(raw)):
            if abs(value) > self._deadzone(i):
                tokens.append(_axis_token("gamepad", i, "-" if value < 0 else "+"))
        for source in self._devices:
            for i, value in enumerate(read.axes(raw, source)):
                if abs(value) > self._deadzone(i, source):
                    tokens.append(_axis_token(source, i, "-" if value < 0 else "+"))
        return tokens

    @staticmethod
    def axes(raw: Any, source: str = "gamepad") -> list[float]:
        """``source``'s axis values clamped to [-1, 1]; NaN and non-numbers become 0."""
        return read.axes(raw, source)

    def human_active(self, raw: Any) -> bool:
        """Whether a person is driving: a key or button pressed (an analog one past the dead
        zone), or an axis some binding reads, of any source, past its dead zone."""
        if read.keys(raw):
            return True
        deadzone = self.controls.deadzone
        for i, value in read.buttons(raw).items():
            if value > read.PRESSED or (f"button {i}" in self.analog and value > deadzone):
                return True
        for ax in self.controls.axes:
            values = read.axes(raw, ax.source)
            if ax.axis < len(values) and abs(values[ax.axis]) > self._deadzone(ax.axis, ax.source):
                return True
        return False

    def _active(self, tokens: list[str]) -> list[_Binding]:
        held = set(tokens)
        active = [b for b in self.bindings if b.parts <= held]
        return [b for b in active if not any(b.parts < other.parts for other in active)]

    def __call__(self, raw: Any) -> Any:
        """The action for one input message (the noop when nothing valid is pressed)."""
        if self.discrete:
            if raw is self._last[0]:
                return self._last[1]
            action = self._discrete(raw)
            self._last = (raw, action)
            return action
        tokens = self.pressed(raw)
        active = self._active(tokens)
        vec = np.array(self.noop, dtype=np.float64)
        for binding in [*self._latch(set(tokens)), *active]:
            if binding.name not in self.toggles and binding.name not in self.analog:
                vec += binding.value
        if self.analog:
            vec += self._analog_sum(raw)
        sources: dict[str, list[float]] = {}
        for ax in self.controls.axes:
            if ax.source not in sources:
                sources[ax.source] = read.axes(raw, ax.source)
            axes = sources[ax.source]
            if ax.axis < len(axes) and ax.dim < self.size:
                value = axes[ax.axis]
                deadzone = self.controls.deadzone if ax.deadzone is None else ax.deadzone
                if abs(value) > deadzone:
                    vec[ax.dim] += value * ax.scale
        vec = np.clip(vec, self.clamp_low, self.clamp_high)
        vec = np.where(self._integer, np.round(vec), vec)
        return unflatten(self.spec, vec)

    def _discrete(self, raw: Any) -> np.int64:
        tokens = self.pressed(raw)
        active = self._active(tokens)
        if not active:
            return np.int64(self.noop)
        order = {t: i for i, t in enumerate(tokens)}
        best = max(active, key=lambda b: (len(b.parts), max(order[p] for p in b.parts)))
        return np.int64(best.value)

    def _analog_sum(self, raw: Any) -> np.ndarray:
        """The analog buttons' vectors, each scaled by how far it is pressed."""
        total = np.zeros(self.size)
        values = read.buttons(raw)
        for b in self.bindings:
            if b.name in self.analog:
                value = values.get(int(b.name.removeprefix("button ")), 0.0)
                if value > self.controls.deadzone:
                    total += value * np.asarray(b.value)
        return total

    def _latch(self, held: set[str]) -> list[_Binding]:
        """Flip the toggles whose keys went down since the last call; the vectors of those on
        (returned under another name, so that the caller adds them once). Toggles with the same
        vector share one latch: Space and the SpaceMouse's button both shut and open one
        gripper."""
        toggles = {self._groups[b.name]: b for b in self.bindings if b.name in self._groups}
        down = {self._groups[b.name] for b in self.bindings
                if b.name in self._groups and b.parts <= held}  # fmt: skip
        self._latched ^= down - self._toggle_held
        self._toggle_held = down
        return [
            _Binding(b.parts, b.value, f"latched:{b.name}")
            for group, b in toggles.items()
            if group in self._latched
        ]

    def resolved(self) -> dict[str, Any]:
        """The bindings in force, JSON-able (for the player's legend)."""

        def show(value: Any) -> Any:
            return value.tolist() if isinstance(value, np.ndarray) else value

        return {
            "bindings": {b.name: show(b.value) for b in self.bindings},
            "noop": show(self.noop),
            "labels": dict(self.controls.labels),
            "deadzone": self.controls.deadzone,
            "axes": [a.model_dump() for a in self.controls.axes],
            "toggle": sorted(self.toggles),
            "analog": sorted(self.analog),
            "clamp": None if self.controls.clamp is None else self.controls.clamp,
            "problems": self.problems,
            "issues": [{"loc": list(loc), "msg": msg} for loc, msg in self.issues],
            "unused": dict(self.unused),
            "unbound": self.unbound(),
        }

    def unbound(self) -> list[Any]:
        """Actions no control reaches: discrete actions (by meaning when named) other than
        the noop, or vector dimensions no key, button or axis moves."""
        if self.discrete:
            reached = {int(b.value) for b in self.bindings} | {int(self.noop)}
            lo, hi = int(self.low[0]), int(self.high[0])
            if hi - lo > 64:
                return []  # a huge discrete space is driven by a few chosen actions
            names = self.meanings
            return [
                names[a - lo] if a - lo < len(names) else a
                for a in range(lo, hi + 1)
                if a not in reached
            ]
        moved = np.zeros(self.size, dtype=bool)
        for b in self.bindings:
            moved |= np.asarray(b.value) != np.asarray(self.noop)
        for ax in self.controls.axes:
            if ax.dim < self.size and ax.scale != 0:
                moved[ax.dim] = True
        fixed = self.low == self.high
        return [int(i) for i in np.flatnonzero(~moved & ~fixed)]


def _axis_token(source: str, axis: int, sign: str) -> str:
    """The token of an axis pushed one way: ``axis:0+`` (gamepad), ``mouse:2-``."""
    return f"{'axis' if source == 'gamepad' else source}:{axis}{sign}"


def _axis_name(source: str, axis: int, sign: str) -> str:
    """A discrete axis binding's name: ``axis 0+`` (gamepad), ``spacemouse axis 2-``."""
    return f"axis {axis}{sign}" if source == "gamepad" else f"{source} axis {axis}{sign}"
