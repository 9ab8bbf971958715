"""Controls: how browser input (keys, gamepad buttons and axes) becomes an action."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from server.study_spec.base import StrictModel

# A value a control produces: a discrete action index, a vector added to a Box action
# (or MultiDiscrete/MultiBinary values), or a character typed into a text-like action.
ActionValue = int | float | list[int] | list[float] | str
# Where an axis comes from: the gamepad's ``axes``, or one of the ``devices`` the player page
# reads (each normalised to [-1, 1] per axis; docs/study-format.md "Devices").
AxisSource = Literal["gamepad", "mouse", "spacemouse", "phone", "touch"]
DEVICE_AXES = 8  # axes a device sends at most (a gamepad: 16)


class AxisBinding(StrictModel):
    """An axis of a gamepad or a device driving one dimension of a Box action (or two
    discrete actions)."""

    source: AxisSource = Field(
        default="gamepad",
        description="gamepad (its axes), mouse ([x, y, wheel, shift-x, shift-y]), spacemouse "
        "([x, y, z, rx, ry, rz]), phone (a paired phone) or touch (the player's own touch "
        "screen: [pad 1 x, pad 1 y, pad 2 x, pad 2 y, tilt forward, tilt right]).",
    )
    axis: int = Field(ge=0, le=15, description="The axis's index in its source's list.")
    dim: int = Field(default=0, ge=0)
    scale: float = Field(default=1.0, allow_inf_nan=False)
    deadzone: float | None = Field(
        default=None, ge=0.0, lt=1.0,
        description="This axis's dead zone (default: the controls' deadzone).",
    )  # fmt: skip
    negative: ActionValue | None = Field(
        default=None, description="Discrete spaces: action when the axis is pushed below -deadzone."
    )
    positive: ActionValue | None = Field(
        default=None, description="Discrete spaces: action when the axis is pushed above deadzone."
    )


class Controls(StrictModel):
    """How browser input becomes an action.

    ``keys`` maps ``KeyboardEvent.code`` values (``ArrowLeft``, ``KeyW``, ``Space``) - or
    combinations joined with ``+`` (``ArrowUp+Space``) - to action values. ``buttons`` maps
    standard-gamepad button indices likewise. ``noop`` is sent when nothing is pressed.
    """

    keys: dict[str, ActionValue] = Field(default_factory=dict)
    buttons: dict[int, ActionValue] = Field(default_factory=dict)
    axes: list[AxisBinding] = Field(default_factory=list)
    deadzone: float = Field(default=0.15, ge=0.0, lt=1.0)
    analog: list[Annotated[int, Field(ge=0, le=63)]] = Field(
        default_factory=list,
        max_length=64,
        description="Gamepad buttons of 'buttons' read as analog (triggers): their vector is "
        "scaled by how far the button is pressed (0..1) instead of on/off. Vector actions only.",
    )
    noop: ActionValue | None = None
    toggle: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="Names in 'keys' that latch: a press turns the binding on until the next "
        "press (a gripper held shut, say). Vector actions only.",
    )
    clamp: list[Annotated[list[Annotated[float, Field(allow_inf_nan=False)]],
                          Field(min_length=2, max_length=2)]] | None = Field(
        default=None,
        max_length=1024,
        description="Vector actions: [low, high] per dimension; the mapped action is kept "
        "inside (and inside the action's own bounds), to cap speeds, say.",
    )  # fmt: skip
    labels: dict[str, str] = Field(
        default_factory=dict, description="Legend text per key or button, shown to the player."
    )
    not_for_players: list[str | int] = Field(
        default_factory=list,
        max_length=1024,
        description="Actions (by name or index; a vector's dimensions by index) players are not "
        "meant to reach: they may stay unbound. Any other unbound action blocks activation.",
    )
