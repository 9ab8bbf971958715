"""The study file format: a pydantic model validated on import, API writes and activation.

A study spec is what a designer edits and what ``studies/*.yaml`` holds. The JSON Schema
in ``docs/study-schema.json`` is generated from :class:`StudySpec`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"
# Seeds are stored in an INTEGER column (32-bit on PostgreSQL) and NumPy wants them >= 0.
MAX_SEED = 2**31 - 1
_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# kwargs are data for the environment's constructor: JSON values, small and shallow.
MAX_KWARGS_DEPTH = 8
MAX_KWARGS_BYTES = 16 * 1024

# A value a control produces: a discrete action index, a vector added to a Box action
# (or MultiDiscrete/MultiBinary values), or a character typed into a text-like action.
ActionValue = int | float | list[int] | list[float] | str


CONTROL_CHARACTER = "control_character"  # the error type of :func:`reject_control_chars`

# Characters no study file can hold: what YAML refuses in a file (C0 controls but tab and
# line breaks, DEL, C1 controls but NEL, U+FFFE/U+FFFF) and lone surrogates (not UTF-8).
_NOT_TEXT = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _nul(text: str) -> str | None:
    return "\x00" if "\x00" in text else None


def _not_text(text: str) -> str | None:
    found = _NOT_TEXT.search(text)
    return found.group() if found else None


def char_name(char: str) -> str:
    """How an error message names a refused character (``NUL``, ``U+0007``)."""
    return "NUL" if char == "\x00" else f"U+{ord(char):04X}"


Loc = tuple[str | int, ...]


def bad_char_path(
    value: Any, path: Loc = (), find: Callable[[str], str | None] = _nul
) -> tuple[Loc, str] | None:
    """Where ``value`` (nested dicts, lists and their keys) holds a character ``find`` spots
    (by default NUL), and that character; None when nowhere.

    Walks with its own stack: a deeply nested input cannot exhaust Python's recursion.
    """
    stack: list[tuple[Any, Loc]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if (char := find(item)) is not None:
                return where, char
        elif isinstance(item, dict):
            for key, sub in reversed(item.items()):
                at = (*where, str(key))
                if isinstance(key, str) and (char := find(key)) is not None:
                    return at, char
                stack.append((sub, at))
        elif isinstance(item, list | tuple):
            for i in reversed(range(len(item))):
                stack.append((item[i], (*where, i)))
    return None


def _dotted(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "value"


def nul_path(value: Any) -> str | None:
    """Where ``value`` holds a NUL character (a dotted path), or None."""
    found = bad_char_path(value)
    return _dotted(found[0]) if found else None


def control_char_problem(value: Any) -> tuple[Loc, str] | None:
    """Where ``value``'s text holds what a study file cannot (a control character, a lone
    surrogate: see :data:`_NOT_TEXT`) and a message naming it; None when nowhere."""
    found = bad_char_path(value, find=_not_text)
    if found is None:
        return None
    where, char = found
    return (
        where,
        f"text cannot contain the control character {char_name(char)} (at {_dotted(where)!r})",
    )


def json_data_problem(value: Any, max_depth: int, max_bytes: int) -> str | None:
    """Why ``value`` is not plain JSON data (finite numbers, string keys) nested at most
    ``max_depth`` containers deep and ``max_bytes`` long as JSON; None when it is."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:  # its own stack: a 20,000-deep list is refused, not a RecursionError
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels"
            if isinstance(item, dict) and not all(isinstance(k, str) for k in item):
                return "mapping keys must be strings"
            stack.extend(
                (sub, depth + 1) for sub in (item.values() if isinstance(item, dict) else item)
            )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "numbers must be finite"
        elif item is not None and not isinstance(item, str | int):  # bool is an int
            return f"{type(item).__name__} is not a JSON value"
    if len(json.dumps(value)) > max_bytes:
        return f"longer than {max_bytes} bytes as JSON"
    return None


def _refuse_chars(data: Any, find: Callable[[str], str | None], error: str, what: str) -> Any:
    found = bad_char_path(data, find=find)
    if found is not None:
        where, char = found
        # ``path`` (in the error's context) is added to ``loc`` by the one place that turns
        # errors into answers (``server.errors.validation_detail``): the answer names the field
        raise PydanticCustomError(
            error,
            "text cannot contain {what} (at {where})",
            {"what": what.format(char=char_name(char)), "where": repr(_dotted(where)),
             "path": list(where)},
        )  # fmt: skip
    return data


def reject_nul(data: Any) -> Any:
    """A ``mode="before"`` model validator: no NUL character anywhere in the input.

    PostgreSQL text cannot hold NUL, so such input is refused here (422) instead of failing
    in the database (500).
    """
    return _refuse_chars(data, _nul, "value_error", "NUL characters")


def reject_control_chars(data: Any) -> Any:
    """A ``mode="before"`` model validator: no text a study file could not hold."""
    return _refuse_chars(data, _not_text, CONTROL_CHARACTER, "the control character {char}")


class StrictModel(BaseModel):
    """A request or spec body: unknown fields and NUL characters are refused."""

    model_config = ConfigDict(extra="forbid")

    _no_nul = model_validator(mode="before")(reject_nul)


def _kwargs_data(value: Any) -> Any:
    if isinstance(value, dict):
        problem = json_data_problem(value, MAX_KWARGS_DEPTH, MAX_KWARGS_BYTES)
        if problem is not None:
            raise ValueError(f"kwargs must be plain JSON data: {problem}")
    return value


KWARGS_DESCRIPTION = (
    f"Settings passed to the environment: JSON values, at most {MAX_KWARGS_DEPTH} levels "
    f"deep and {MAX_KWARGS_BYTES // 1024} KiB. Catalog environments accept only the "
    "settings of their schema."
)


class GymnasiumSource(StrictModel):
    """An environment registered with Gymnasium, built with ``gymnasium.make(id, **kwargs)``.

    Only ids of the catalog or registered by packages the operator allows; never
    ``module:Env`` ids (they import a module).
    """

    kind: Literal["gymnasium"] = "gymnasium"
    id: str = Field(min_length=1, max_length=200, examples=["CartPole-v1"])
    kwargs: dict[str, Any] = Field(default_factory=dict, description=KWARGS_DESCRIPTION)

    _bounded_kwargs = field_validator("kwargs", mode="before")(_kwargs_data)


class DmEnvSource(StrictModel):
    """A dm_env environment built by calling ``module:function(**kwargs)``.

    Only factories of the catalog, listed by the operator, or registered by an installed
    package (entry-point group ``rlds_studio.environments``).
    """

    kind: Literal["dm_env"] = "dm_env"
    factory: str = Field(max_length=200, examples=["dm_control.suite:load"])
    kwargs: dict[str, Any] = Field(default_factory=dict, description=KWARGS_DESCRIPTION)

    _bounded_kwargs = field_validator("kwargs", mode="before")(_kwargs_data)

    @field_validator("factory")
    @classmethod
    def _module_function(cls, v: str) -> str:
        if not _FACTORY.match(v):
            raise ValueError("factory must look like 'package.module:function'")
        return v


Source = Annotated[GymnasiumSource | DmEnvSource, Field(discriminator="kind")]


class AxisBinding(StrictModel):
    """A gamepad axis driving one dimension of a Box action (or two discrete actions)."""

    axis: int = Field(ge=0, le=15)
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


class EnvironmentSpec(StrictModel):
    """One environment of a study."""

    id: str = Field(pattern=SLUG, description="Stable identifier, used in exports.")
    name: str = Field(min_length=1, max_length=200, description="Display name.")
    source: Source
    instructions: str = Field(default="", max_length=20_000, description="Markdown.")
    mode: Literal["sync", "async"] = "sync"
    fps: int = Field(default=30, ge=1, le=120, description="Steps per second in async mode.")
    max_steps: int | None = Field(default=None, ge=1, le=1_000_000)
    max_duration_s: float | None = Field(default=None, gt=0, le=24 * 3600)
    controls: Controls | None = Field(
        default=None, description="Overrides the catalog's default controls."
    )
    image_quality: Literal["low", "medium", "high"] = "medium"
    adaptive_quality: bool = Field(
        default=False,
        description="Lower the streamed JPEG quality (down to low) while a player's link falls "
        "behind, and raise it again up to image_quality; recorded observations never change.",
    )
    camera: str | None = None
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] | None = Field(
        default=None, description="Seeds used in turn; a random seed per episode when empty."
    )
    episodes_per_participant: int = Field(default=1, ge=1, le=10_000)
    episodes_total: int | None = Field(
        default=None, ge=1, le=10_000_000,
        description="Completed episodes (all participants) after which the environment is full.",
    )  # fmt: skip
    countdown_s: int = Field(
        default=0, ge=0, le=10, description="Async: a countdown shown before an episode starts."
    )
    ask_outcome: bool | None = Field(
        default=None,
        description="Ask the player at save time whether they succeeded (default: the study's).",
    )
    speed: float = Field(
        default=1.0, ge=0.05, le=10, description="Async: the clock speed episodes play at."
    )
    speed_choices: list[Annotated[float, Field(ge=0.05, le=10)]] = Field(
        default_factory=list, max_length=10,
        description="Async: the speeds players may choose from; empty (the default): fixed.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _speed_offered(self) -> EnvironmentSpec:
        if self.speed_choices and self.speed not in self.speed_choices:
            raise ValueError(f"speed {self.speed} is not one of speed_choices")
        return self


CODE = r"^[A-Za-z0-9_-]{0,64}$"


def check_url(value: str) -> str:
    """An http(s) URL with a host, or empty; anything else (javascript:, data:...) is refused."""
    if not value:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL")
    if any(ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in value):
        raise ValueError("must not contain spaces or control characters")
    return value


class Requirements(StrictModel):
    """What a participant must have done, on top of the per-environment quotas."""

    min_episodes: int = Field(default=0, ge=0, le=10_000, description="Completed episodes.")
    min_play_time_s: float = Field(
        default=0, ge=0, le=24 * 3600, description="Active play time (completed episodes)."
    )


Input = Literal["keyboard", "gamepad", "touch"]  # what a participant may play with
MAX_TOUCH_BUTTONS = 8  # key bindings an environment may have to get on-screen touch buttons


def _default_inputs() -> list[Input]:
    return ["keyboard", "gamepad"]


class CrowdSettings(StrictModel):
    """How crowd workers (Prolific, MTurk, a typed id) take part: see docs/study-format.md."""

    consent: str = Field(
        default="", max_length=50_000, description="Markdown; must be accepted when set."
    )
    assignment: Literal["choice", "balanced"] = "choice"
    allow_anonymous: bool = Field(default=False, description="No id needed: one is made up.")
    completion_code: str = Field(default="", pattern=CODE)
    screenout_code: str = Field(default="", pattern=CODE)
    completion_url: str = Field(
        default="", max_length=2000, description="http(s); {code} is replaced by the code."
    )
    screenout_url: str = Field(
        default="", max_length=2000, description="http(s); {code} is replaced by the code."
    )
    full_code: str = Field(
        default="", pattern=CODE,
        description="The code of a participant for whom the study filled up before they "
        "finished (Prolific: a screen-out or no-code return); empty: no code.",
    )  # fmt: skip
    full_url: str = Field(
        default="", max_length=2000,
        description="Where to send them (http(s); {code} is replaced by the code).",
    )  # fmt: skip
    requirements: Requirements = Field(default_factory=Requirements)
    inputs: list[Input] = Field(
        default_factory=_default_inputs, min_length=1, max_length=3,
        description="What participants may play with. A device with none of these (a phone, "
        "where touch is not listed) is told so before consent. With touch, environments with "
        f"at most {MAX_TOUCH_BUTTONS} key bindings get on-screen buttons.",
    )  # fmt: skip

    @field_validator("inputs")
    @classmethod
    def _inputs_once(cls, value: list[Input]) -> list[Input]:
        if len(set(value)) != len(value):
            raise ValueError("inputs lists an input twice")
        return value

    @field_validator("completion_url", "screenout_url", "full_url")
    @classmethod
    def _http_only(cls, value: str) -> str:
        return check_url(value)


class StudySpec(StrictModel):
    """A whole study: what a designer configures and ``studies/*.yaml`` holds."""

    _no_control = model_validator(mode="before")(reject_control_chars)

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=5_000)
    instructions: str = Field(default="", max_length=50_000, description="Markdown.")
    pause_timeout_s: float = Field(
        default=300, gt=0, le=24 * 3600, description="A pause longer than this abandons."
    )
    environments: list[EnvironmentSpec] = Field(min_length=1, max_length=50)
    crowd: CrowdSettings = Field(default_factory=CrowdSettings)
    ask_outcome: bool = Field(
        default=False,
        description="Ask players at save time whether they succeeded (an environment may "
        "override it); the answer is the episode's player outcome.",
    )

    @field_validator("crowd")
    @classmethod
    def _requirement_reachable(cls, crowd: CrowdSettings, info: ValidationInfo) -> CrowdSettings:
        """Required episodes the quotas cannot give a participant are a mistake, not a reason
        to push participants past each environment's quota."""
        envs: list[EnvironmentSpec] = info.data.get("environments") or []
        most = sum(min(e.episodes_per_participant, e.episodes_total or e.episodes_per_participant)
                   for e in envs)  # fmt: skip
        wanted = crowd.requirements.min_episodes
        if envs and wanted > most:
            raise ValueError(
                f"requirements.min_episodes is {wanted}, but the environments' quotas "
                f"(episodes_per_participant, episodes_total) give a participant at most {most}"
            )
        return crowd

    @model_validator(mode="after")
    def _unique_env_ids(self) -> StudySpec:
        seen: set[str] = set()
        for env in self.environments:
            if env.id in seen:
                raise ValueError(f"environment id {env.id!r} is used twice")
            seen.add(env.id)
        return self

    def asks_outcome(self, env_id: str) -> bool:
        """Whether the save question of this environment asks Succeeded / Failed."""
        env = self.environment(env_id)
        return self.ask_outcome if env.ask_outcome is None else env.ask_outcome

    def environment(self, env_id: str) -> EnvironmentSpec:
        """The environment with this id (KeyError when absent)."""
        for env in self.environments:
            if env.id == env_id:
                return env
        raise KeyError(env_id)
