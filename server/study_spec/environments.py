"""Environments of a study: where each comes from (Gymnasium, dm_env) and how it plays."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from server.study_spec.base import StrictModel, json_data_problem
from server.study_spec.controls import Controls

SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"
# Seeds are stored in an INTEGER column (32-bit on PostgreSQL) and NumPy wants them >= 0.
MAX_SEED = 2**31 - 1
_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# kwargs are data for the environment's constructor: JSON values, small and shallow.
MAX_KWARGS_DEPTH = 8
MAX_KWARGS_BYTES = 16 * 1024


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


class Takeover(StrictModel):
    """How control passes between the policy and the player."""

    release_delay_s: float = Field(
        default=1.0, ge=0, le=10,
        description="Seconds after the player lets go of every control before the policy "
        "drives again.",
    )  # fmt: skip


class PolicySpec(StrictModel):
    """Shared autonomy: a policy the operator allows drives; the player takes over at will.

    ``id`` names a policy installed on the server (entry-point group
    ``rlds_studio.policies``, or the operator's ``STUDIO_POLICIES``); nothing else is
    imported. Checked at activation (422 naming ``environments.N.policy.id``).
    """

    id: str = Field(pattern=SLUG, examples=["fetch-pick-place-scripted"])
    takeover: Takeover = Field(default_factory=Takeover)


MAX_INSTRUCTION = 500  # characters of a task's instruction (shown large on the player)
MAX_TASKS = 100


class TaskSpec(StrictModel):
    """One task of an environment: the instruction a participant is given for an episode,
    and the settings (and seeds) that make the scene it is given for.

    ``settings`` are merged over the environment's ``source.kwargs`` for episodes of this
    task (checked against the catalog's settings schema like them); ``seeds``, when set,
    replace the environment's seeds for them.
    """

    id: str = Field(pattern=SLUG, description="Stable identifier, used in exports.")
    instruction: str = Field(
        min_length=1, max_length=MAX_INSTRUCTION,
        description="What the participant is asked to do, shown before and during the "
        "episode (plain text) and exported as the episode's language instruction.",
    )  # fmt: skip
    label: str | None = Field(
        default=None, min_length=1, max_length=40, description="A short name for lists."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Settings merged over source.kwargs for this task."
    )
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] | None = Field(
        default=None, max_length=10_000,
        description="Seeds used in turn for this task's episodes (default: the environment's).",
    )  # fmt: skip

    _bounded_settings = field_validator("settings", mode="before")(_kwargs_data)

    @field_validator("instruction")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("the instruction is empty")
        return v

    @property
    def name(self) -> str:
        """How lists name it: its label, else its id."""
        return self.label or self.id

    def public(self) -> dict[str, Any]:
        """What the player and the review pages show of it."""
        return {"id": self.id, "label": self.label, "instruction": self.instruction}


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
    policy: PolicySpec | None = Field(
        default=None,
        description="Shared autonomy: this policy drives until the player presses a control.",
    )
    step_on_input: bool = Field(
        default=False,
        description="Async: a fresh input runs its slot's step at once instead of at the "
        "slot's end (lower latency; still one step per 1/fps, the pace unchanged).",
    )
    verify_images: Literal["sample", "every_step"] = Field(
        default="sample",
        description="The replay check compares the observation's camera images at every "
        "20th step (and the first and last) and every other value at every step; "
        "every_step: the images at every step too (slower: each is drawn again).",
    )
    image_quality: Literal["low", "medium", "high"] = "medium"
    adaptive_quality: bool = Field(
        default=False,
        description="Lower the streamed JPEG quality (down to low) while a player's link falls "
        "behind, and raise it again up to image_quality; recorded observations never change.",
    )
    min_stream_fps: int | None = Field(
        default=None, ge=1, le=120,
        description="Async, with adaptive_quality: once low quality is not enough, stream only "
        "every 2nd, 3rd, ... step's frame, down to this many frames per second (a step with a "
        "fresh input is always streamed); the pace and the recording are unchanged. None: "
        "every frame is streamed.",
    )  # fmt: skip
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
    allow_end: bool | None = Field(
        default=None,
        description='Let the participant end an episode at any step ("I\'m done": the '
        "player's button and key); the save question follows as at any ending, and the "
        "episode is truncated, ended_by participant. None (the default): on for manipulation "
        "tasks (PickCube, FetchPickAndPlace, the Robosuite tasks), off otherwise.",
    )
    speed: float = Field(
        default=1.0, ge=0.05, le=10, description="Async: the clock speed episodes play at."
    )
    speed_choices: list[Annotated[float, Field(ge=0.05, le=10)]] = Field(
        default_factory=list, max_length=10,
        description="Async: the speeds players may choose from; empty (the default): fixed.",
    )  # fmt: skip

    tasks: list[TaskSpec] = Field(
        default_factory=list, max_length=MAX_TASKS,
        description="Language-conditioned tasks: each episode draws one (task_order); "
        "none: every episode has the environment's own instructions.",
    )  # fmt: skip
    task_order: Literal["balanced", "fixed", "choice"] = Field(
        default="balanced",
        description="How an episode's task is drawn: balanced (the task with the fewest "
        "episodes in the study so far), fixed (each participant's episodes take the tasks in "
        "the listed order, in turn), choice (the participant picks one before the episode).",
    )

    @model_validator(mode="after")
    def _speed_offered(self) -> EnvironmentSpec:
        if self.speed_choices and self.speed not in self.speed_choices:
            raise ValueError(f"speed {self.speed} is not one of speed_choices")
        if self.min_stream_fps is not None and self.min_stream_fps >= self.fps:
            raise ValueError(f"min_stream_fps must be below fps ({self.fps})")
        seen: set[str] = set()
        for task in self.tasks:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} is used twice")
            seen.add(task.id)
        return self

    def task(self, task_id: str) -> TaskSpec:
        """The task with this id (KeyError when absent)."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def for_task(self, task: TaskSpec | None) -> EnvironmentSpec:
        """The environment as a worker builds it for an episode of ``task``: its settings
        merged over the source's, its seeds, and only that task listed (the log's config)."""
        if task is None:
            return self
        source = self.source.model_copy(update={"kwargs": {**self.source.kwargs,
                                                           **task.settings}})  # fmt: skip
        return self.model_copy(update={"source": source, "tasks": [task],
                                       "seeds": task.seeds or self.seeds})  # fmt: skip

    @property
    def max_stream_every(self) -> int:
        """The adaptive stream may send every this many steps' frame (1: every frame)."""
        if self.mode != "async" or not self.adaptive_quality or self.min_stream_fps is None:
            return 1
        return max(1, self.fps // self.min_stream_fps)
