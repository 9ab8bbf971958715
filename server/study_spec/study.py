"""The study spec itself: a whole study, as a designer configures it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from server.study_spec.base import StrictModel, reject_control_chars
from server.study_spec.crowd import CrowdSettings
from server.study_spec.environments import EnvironmentSpec
from server.study_spec.feedback import FeedbackSpec


class StudySpec(StrictModel):
    """A whole study: what a designer configures and ``studies/*.yaml`` holds."""

    _no_control = model_validator(mode="before")(reject_control_chars)

    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=5_000)
    instructions: str = Field(default="", max_length=50_000, description="Markdown.")
    pause_timeout_s: float = Field(
        default=300, gt=0, le=24 * 3600, description="A pause longer than this abandons."
    )
    kind: Literal["play", "feedback"] = Field(
        default="play",
        description="play: participants play the environments (demonstrations); feedback: "
        "they judge recorded episodes of other studies (the feedback section, "
        "docs/feedback.md) and the study has no environments.",
    )
    environments: list[EnvironmentSpec] = Field(default_factory=list, max_length=50)
    feedback: FeedbackSpec | None = Field(
        default=None, description="A feedback study's items, questions, gold and screening."
    )
    crowd: CrowdSettings = Field(default_factory=CrowdSettings)
    ask_outcome: bool = Field(
        default=False,
        description="Ask players at save time whether they succeeded (an environment may "
        "override it); the answer is the episode's player outcome.",
    )
    narrate_episodes: bool = Field(
        default=False,
        description="After saving an episode, ask the participant to narrate it (what they "
        "did, step range by step range) on a short form that replays it; they may skip it.",
    )

    @field_validator("environments")
    @classmethod
    def _some_environment(cls, envs: list[EnvironmentSpec], info: ValidationInfo
                          ) -> list[EnvironmentSpec]:  # fmt: skip
        if info.data.get("kind", "play") == "play" and not envs:
            raise ValueError("a play study has at least one environment")
        return envs

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
    def _kind(self) -> StudySpec:
        if self.kind == "play":
            if self.feedback is not None:
                raise ValueError('a feedback section belongs to a study of kind "feedback"')
        else:
            if self.feedback is None:
                raise ValueError("a feedback study has a feedback section (what is judged)")
            if self.environments:
                raise ValueError("a feedback study has no environments: its participants judge")
            if self.narrate_episodes or self.ask_outcome:
                raise ValueError("narrate_episodes and ask_outcome are for play studies")
        return self

    @property
    def judging(self) -> FeedbackSpec | None:
        """The feedback section of a feedback study (None for a play study)."""
        return self.feedback if self.kind == "feedback" else None

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
