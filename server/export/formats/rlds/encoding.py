"""The RLDS format's records: the dataset's features and one episode's serialized record,
the same in this process (server/export/formats/rlds/writer.py) and on Beam
(server/export/formats/rlds/beam.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from server.export.base import (
    EpisodeInput,
    ExportOptions,
    Reference,
    naming,
    read_for_writing,
    summarize,
)
from server.export.card import ExportedEpisode
from server.export.episode import EnvSpecs, RldsEpisode
from server.export.formats.rlds import oxe
from server.export.formats.rlds.example import EpisodeSerializer, episode_example
from server.export.formats.rlds.features import episode_features, episode_fields, step_features
from server.export.tags import tag_columns


def rlds_features(specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str]) -> Any:
    """The RLDS export's TFDS FeaturesDict (the OXE profile's when chosen)."""
    if options.profile == "oxe":
        step = step_features(
            oxe.profile_specs(specs),
            keep_step_metadata=options.keep_step_metadata,
            step_tag_names=tag_names,
        )
        return oxe.episode_features(step, episode_fields())
    return episode_features(
        specs, keep_step_metadata=options.keep_step_metadata, step_tag_names=tag_names
    )


def dataset_description(options: ExportOptions) -> str:
    """The description in ``dataset_info.json``."""
    return options.description or f"RLDS Studio export of study {options.study}"


def dataset_metadata(options: ExportOptions) -> dict[str, Any]:
    """The metadata in ``dataset_info.json``."""
    return {
        "exporter": "rlds-studio",
        "format": "rlds",
        "profile": options.profile or "rlds",
        "study": options.study,
    }


def dataset_info_fields(options: ExportOptions) -> dict[str, Any]:
    """The dataset's name, version, description and metadata, as the TFDS writers take them."""
    return {
        "name": options.name,
        "version": options.version,
        "description": dataset_description(options),
        "metadata": dataset_metadata(options),
    }


@dataclass(frozen=True)
class EncodedEpisode:
    """One episode as the RLDS record the shards hold, and what the job says about it."""

    record: bytes  # a serialized tf.train.Example
    summary: ExportedEpisode
    statistics: oxe.EpisodeRows | None  # the OXE profile's per-episode rows


def encode_episode(
    ep: EpisodeInput,
    episode: RldsEpisode,
    options: ExportOptions,
    tag_names: Sequence[str],
    serializer: EpisodeSerializer,
) -> EncodedEpisode:
    """Serialize one read (and cut) episode: its record and the OXE profile's rows."""
    summary = summarize(ep, episode)
    profiled = options.profile == "oxe"
    rows = None
    if profiled:
        episode = oxe.wrap_observations(episode)
        rows = oxe.episode_rows(episode)
    columns = tag_columns(ep.step_tags, tag_names, len(episode))
    example = episode_example(
        episode,
        {
            **episode.log_metadata,
            "episode_id": ep.episode_id,
            "agent_id": ep.agent_id,
            "status": ep.status,
            "tags": ep.tags,
            "notes": ep.notes,
            **ep.outcome_fields(),
            **ep.replay_fields(),
            **ep.task_fields(),
            **ep.ending_fields(episode),
            **ep.judgement_fields(),
        },
        keep_step_metadata=options.keep_step_metadata,
        tag_columns=columns,
        narrations=ep.narration_column(len(episode)),
    )
    if profiled:
        example = oxe.profile_example(example, ep.instruction)
    return EncodedEpisode(serializer.serialize(example), summary, rows)


def encode_rlds(
    ep: EpisodeInput,
    options: ExportOptions,
    tag_names: Sequence[str],
    serializer: EpisodeSerializer,
    reference: Reference | None = None,
) -> EncodedEpisode:
    """Read (checked against ``reference``), realign and serialize one episode (the work a
    Beam worker does per episode)."""
    with naming(ep.episode_id):
        ep, episode = read_for_writing(ep, options, reference=reference)
        return encode_episode(ep, episode, options, tag_names, serializer)
