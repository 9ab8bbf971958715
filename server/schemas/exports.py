"""Export jobs: what to export (the selection), how (the options), the preview, the job."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, model_validator

from server.export import registry
from server.models import EpisodeStatus, JobState
from server.schemas.episodes import EpisodeFilterIn
from server.study_spec import StrictModel


class ExportSelection(EpisodeFilterIn):
    """Explicit episode ids, or the episodes page's filter (by default: completed episodes)."""

    episode_ids: list[str] | None = Field(
        default=None, description="Export exactly these episodes (the filter is then ignored)."
    )
    statuses: list[EpisodeStatus] = Field(default_factory=lambda: [EpisodeStatus.completed])
    include_excluded: bool = Field(
        default=False, description="Export episodes marked excluded too (left out by default)."
    )


# The choices come from the export registry (server/export/registry.py): one folder per format.
_FORMATS = registry.formats()
_ONLY_PROFILES = f"{' or '.join(registry.with_profiles())} format only"
_ONLY_BEAM = f"{' or '.join(registry.on_beam())} format only"
if TYPE_CHECKING:  # the choices are known when the app starts, not to the type checker
    FormatName = str
    ProfileName = str
else:
    FormatName = Literal[tuple(f.name for f in _FORMATS)]
    ProfileName = Literal[tuple(registry.profile_names())]


MIN_REGENERATED_SIZE, MAX_REGENERATED_SIZE = 32, 1024


class RegenerateIn(StrictModel):
    """Observations drawn again by replay: at another image size, from other cameras."""

    image_size: int | None = Field(
        default=None,
        ge=MIN_REGENERATED_SIZE,
        le=MAX_REGENERATED_SIZE,
        description="Side of each image in pixels (None: as recorded); within the "
        "environment's own range too (PickCube and Robosuite: 32 to 512).",
    )
    cameras: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=16,
        description="The cameras whose images the observation holds (None: as recorded); "
        "PickCube: some of front, wrist.",
    )

    @model_validator(mode="after")
    def _something(self) -> RegenerateIn:
        if self.image_size is None and self.cameras is None:
            raise ValueError("give image_size, cameras or both")
        if self.cameras is not None and len(set(self.cameras)) != len(self.cameras):
            raise ValueError("each camera once")
        return self


class ExportOptionsIn(StrictModel):
    """How to export (see docs/export.md)."""

    format: FormatName = Field(
        default=registry.default(),
        description="; ".join(f"{f.name}: {f.summary}" for f in _FORMATS) + ".",
    )
    strip_step_metadata: bool = False
    step_tags: list[str] | None = Field(
        default=None, description="Step tag names that become tag:<name> fields (None: all)."
    )
    end_tags: list[str] = Field(default_factory=list)
    profile: ProfileName | None = Field(
        default=None,
        description="; ".join(
            f"{name}: {summary} ({_ONLY_PROFILES})"
            for f in _FORMATS
            for name, summary in f.profiles.items()
        )
        + ".",
    )
    archive: Literal["folder", "zip", "tar.gz"] = "zip"
    videos: bool = Field(
        default=False,
        description="Add episode_videos/<episode id>.mp4 per episode (what the player saw).",
    )
    name: str | None = Field(
        default=None, max_length=64, description="Dataset name (snake_case); default from study."
    )
    engine: Literal["auto", "single", "beam"] = Field(
        default="auto",
        description="How the export runs: single (one process), beam (an Apache Beam pipeline "
        f"on the configured runner; {_ONLY_BEAM}; same output), or auto (beam for a "
        f"{' or '.join(registry.on_beam())} export of at least STUDIO_BEAM_MIN_STEPS steps). "
        "The job's options say which ran.",
    )
    split_by_env: bool = Field(
        default=False,
        description="One dataset per environment (<name>_<env>) in the one output: for "
        "selections whose environments have different spaces.",
    )
    regenerate: RegenerateIn | None = Field(
        default=None,
        description="Regenerate the observations by replay (environments whose settings "
        "declare it: PickCube, Robosuite); an episode that diverges is left out and listed.",
    )


class ExportCreate(StrictModel):
    selection: ExportSelection = Field(default_factory=ExportSelection)
    options: ExportOptionsIn = Field(default_factory=ExportOptionsIn)


class ExportPreviewIn(StrictModel):
    """What the episodes page lists (its filter) and what the export would select."""

    listed: EpisodeFilterIn = Field(
        default_factory=EpisodeFilterIn,
        description="The list's filter (ignored when the selection names episode ids).",
    )
    selection: ExportSelection = Field(default_factory=ExportSelection)
    options: ExportOptionsIn | None = Field(
        default=None,
        description="The export's options: with them, the answer's ``spaces`` says whether the "
        "selection's environments share their spaces and what this format does when not.",
    )


class SpacesPreview(BaseModel):
    """Whether one dataset can hold the selection's environments, and what to do if not."""

    mixed: bool = Field(description="Two environments have different spaces.")
    environments: list[str]
    split: Literal["none", "automatic", "offer", "impossible"] = Field(
        description="none: one dataset holds them; automatic: "
        f"{' or '.join(f.name for f in _FORMATS if f.splits_by_env)} writes one folder per "
        "environment; offer: one dataset per environment works (options.split_by_env); "
        "impossible: not in this format, even per environment."
    )
    message: str


class LeftOut(BaseModel):
    reason: str
    count: int
    episode_ids: list[str] = Field(description="The first few, sorted.")


class ExportPreviewPublic(BaseModel):
    listed: int
    exported: int
    left_out: list[LeftOut]
    spaces: SpacesPreview | None = Field(default=None, description="When options were sent.")


class DatasetExportCreate(StrictModel):
    """An export of a dataset: every episode it selects now, with its split (the options as
    a study's export's; ``split_by_env`` does not apply: a dataset's spaces agree)."""

    options: ExportOptionsIn = Field(default_factory=ExportOptionsIn)


class ExportJobPublic(BaseModel):
    id: int
    study_id: int | None = Field(description="The study exported (None: a dataset's export).")
    dataset_id: int | None = Field(default=None, description="The dataset exported, if one.")
    state: JobState
    format: str
    archive: str
    name: str
    episodes_total: int
    episodes_done: int
    steps_total: int
    steps_done: int
    progress: float
    message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    download_url: str | None
    options: dict[str, Any]
    selection: dict[str, Any]
