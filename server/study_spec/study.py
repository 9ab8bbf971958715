"""The study spec itself: a whole study, as a designer configures it."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator, model_validator

from server.study_spec.base import StrictModel, reject_control_chars
from server.study_spec.crowd import CrowdSettings
from server.study_spec.environments import EnvironmentSpec


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
    narrate_episodes: bool = Field(
        default=False,
        description="After saving an episode, ask the participant to narrate it (what they "
        "did, step range by step range) on a short form that replays it; they may skip it.",
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
