"""What an export takes: a designer's selection as episodes (422 naming what is wrong when it
selects none), the exporter's inputs of them, and the checks made before a job is queued."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from server.core.security import salted_hash
from server.errors import Invalid
from server.export import (
    EpisodeInput,
    ExportError,
    ExportOptions,
    IncompatibleEnvironmentsError,
    NarratedSpan,
    TaggedSpan,
    check_compatible,
)
from server.export.base import check_complete
from server.export.judgements import JudgementSummary
from server.export.run import check_format
from server.models import Episode, EpisodeStatus, ReplayVerdict, Study
from server.schemas.episodes import EpisodeFilterIn
from server.schemas.exports import ExportSelection
from server.services.exports.spaces import one_log_per_env
from server.services.feedback import results as feedback_results
from server.services.review import labels, review, verdicts
from server.services.studies import studies


def selection_filter(sel: EpisodeFilterIn) -> review.EpisodeFilter:
    """The review filter of the page's filter fields (an export selection is one too)."""
    return review.EpisodeFilter(
        statuses=[str(s) for s in sel.statuses],
        env_keys=sel.environments,
        participants=sel.participants,
        tags=sel.tags,
        exclude_tags=sel.exclude_tags,
        since=sel.since,
        until=sel.until,
        min_return=sel.min_return,
        max_return=sel.max_return,
        min_steps=sel.min_steps,
        max_steps=sel.max_steps,
        p99_over_ms=sel.p99_over_ms,
        idle_over=sel.idle_over,
        under_median=sel.under_median,
        over_median=sel.over_median,
        include_tests=sel.include_tests,
        outcomes=sel.outcomes,
        excluded=_excluded(sel) if isinstance(sel, ExportSelection) else sel.excluded,
        replay_verdicts=sel.replay_verdicts,
        task=sel.task,
    )


def _excluded(sel: ExportSelection) -> bool | None:
    """Exports leave excluded episodes out unless asked to include them (or ask for them:
    ``excluded``, the page's filter)."""
    if sel.excluded is not None:
        return sel.excluded
    return None if sel.include_excluded else False


# what :func:`episode_inputs` reads of each episode, loaded with it
LOAD = (
    selectinload(Episode.tags),
    selectinload(Episode.step_tags),
    selectinload(Episode.notes),
    selectinload(Episode.narrations),
)


def resolve(db: Session, study: Study, sel: ExportSelection) -> list[Episode]:
    """The selected episodes of ``study``; 422 naming what is wrong when there are none."""
    if sel.episode_ids is not None:
        ids = list(dict.fromkeys(sel.episode_ids))
        if not ids:
            raise Invalid(
                "Select at least one episode.",
                detail=[{"loc": ["body", "selection", "episode_ids"], "msg": "empty selection"}],
            )
        rows = db.scalars(
            select(Episode).options(*LOAD).where(Episode.id.in_(ids), Episode.study_id == study.id)
        ).all()
        found = {e.id: e for e in rows}
        missing = [i for i in ids if i not in found]
        if missing:
            raise Invalid(
                f"No episode {', '.join(missing[:5])} in this study.",
                detail=[
                    {"loc": ["body", "selection", "episode_ids"], "msg": f"unknown episode {i}"}
                    for i in missing
                ],
            )
        episodes = [found[i] for i in ids]
        if not sel.include_excluded:
            episodes = [e for e in episodes if not e.excluded]
            if not episodes:
                raise Invalid(
                    "Every selected episode is marked excluded; include excluded episodes "
                    "to export them.",
                    detail=[
                        {
                            "loc": ["body", "selection"],
                            "msg": "Every selected episode is marked excluded",
                        }
                    ],
                )
    else:
        query = review.filtered(study.id, selection_filter(sel))
        episodes = list(db.scalars(query.options(*LOAD).order_by(Episode.started_at, Episode.id)))
        if not episodes:
            raise Invalid(
                "No episode matches the selection (only completed episodes are exported "
                "unless you choose other statuses; excluded ones only when included).",
                detail=[{"loc": ["body", "selection"], "msg": "No episode matches the selection"}],
            )
    recording = [e.id for e in episodes if e.status == EpisodeStatus.recording]
    if recording:
        raise Invalid(
            f"Episode {recording[0]} is still being recorded; export it once it has ended.",
            detail=[{"loc": ["body", "selection"], "msg": f"episode {recording[0]} recording"}],
        )
    return episodes


def instructions_of(study: Study) -> dict[str, str]:
    """Each environment's instructions: the language instruction of its episodes that drew
    no task (an episode's own task instruction comes first: :func:`episode_instruction`).
    Never the study's own instructions, the page of Markdown a participant reads first
    (headings, keys, consent), which is no task's sentence."""
    spec = studies.spec_of(study)
    return {env.id: (env.instructions or "").strip() for env in spec.environments}


def episode_instruction(episode: Episode, instructions: dict[str, str] | None) -> str:
    """The episode's language instruction: its task's as it was shown (the row keeps it),
    else its environment's (``instructions``: :func:`instructions_of`); "" when none."""
    own = (episode.instruction or "").strip()
    return own or (instructions or {}).get(episode.env_key, "")


def narrations_of(episode: Episode) -> tuple[NarratedSpan, ...]:
    """The episode's narrations, by start step (ties: as written), for the export."""
    rows = sorted(episode.narrations, key=lambda n: (n.start_step, n.id))
    return tuple(NarratedSpan(n.start_step, n.end_step, n.text) for n in rows)


def replay_fields(episode: Episode) -> dict[str, Any]:
    """The replay verdict an export carries: ``replay_verdict``, ``replay_step`` (the RLDS
    step, as the review shows it; -1: none) and ``replay_message`` ("": none)."""
    found = verdicts.verdict(episode)
    step = found["replay_step"]
    return {
        "replay_verdict": str(found["replay_verdict"] or ReplayVerdict.pending),
        "replay_step": -1 if step is None else int(step),
        "replay_message": str(found["replay_message"] or ""),
    }


def episode_inputs(
    db: Session,
    episodes: list[Episode],
    secret_key: str,
    data_root: Path,
    instructions: dict[str, str] | None = None,
) -> list[EpisodeInput]:
    """The exporter's inputs: log folders, pseudonymous agent ids, tags, notes, tasks and
    instructions (the episode's task's, else ``instructions``' of its environment),
    narrations, outcomes, replay verdicts and the summaries of their judgements in feedback
    studies (one query for all of them)."""
    externals = review.external_ids(db, episodes)
    judged = feedback_results.episode_summaries(db, [e.id for e in episodes])
    inputs = []
    for e in episodes:
        inputs.append(
            EpisodeInput(
                log_dir=review.log_dir(e, data_root),
                episode_id=e.id,
                agent_id=salted_hash(secret_key, review.agent_key(e, externals)),
                status=str(e.status),
                tags=tuple(sorted(t.name for t in e.tags)),
                step_tags=tuple(
                    TaggedSpan(t.name, t.start_step, t.end_step)
                    for t in sorted(e.step_tags, key=lambda t: (t.start_step, t.id))
                ),
                notes="\n\n".join(n.body for n in labels.notes_of(e)),
                instruction=episode_instruction(e, instructions),
                task_id=e.task_key or "",
                narrations=narrations_of(e),
                outcome=review.effective_outcome(e) or "",
                player_outcome=e.player_outcome or "",
                reviewer_outcome=e.outcome or "",
                **replay_fields(e),
                judgements=JudgementSummary.of(judged.get(e.id)),
                ended_by=e.ended_by or "",
                env_outcome=e.env_outcome or "",
            )
        )
    return inputs


INCOMPATIBLE = "incompatible_environments"


def check_inputs(
    episodes: list[Episode],
    inputs: list[EpisodeInput],
    options: ExportOptions,
    split_by_env: bool = False,
) -> None:
    """Cheap checks before queuing: logs exist; one log per environment has the same spaces
    (each environment its own, when split by environment), which the format can hold.

    Environments with different spaces answer a 422 with ``code`` ``incompatible_environments``
    and the environments in ``environments``: the page offers to split by environment."""
    for ep in inputs:
        if not ep.log_dir.is_dir():
            raise Invalid(
                f"Episode {ep.episode_id} has no log on disk; it cannot be exported.",
                detail=[{"loc": ["body", "selection"], "msg": f"episode {ep.episode_id}: no log"}],
            )
        try:
            check_complete(ep)
        except ExportError as exc:
            raise Invalid(
                f"Cannot export this selection yet: {exc}.",
                detail=[{"loc": ["body", "selection"], "msg": str(exc)}],
            ) from exc
    one_per_env = one_log_per_env(episodes, inputs)
    groups = [[ep] for ep in one_per_env.values()] if split_by_env else [list(one_per_env.values())]
    try:
        used = sorted({t.name for ep in inputs for t in ep.step_tags})
        names = used if options.step_tag_names is None else sorted(set(options.step_tag_names))
        for group in groups:
            check_format(check_compatible(group), options, names)
    except IncompatibleEnvironmentsError as exc:
        raise Invalid(
            f"Cannot export this selection: {exc}.",
            detail=[{"loc": ["body", "selection"], "msg": "environments with different spaces",
                     "environments": sorted(one_per_env)}],
            code=INCOMPATIBLE,
        ) from exc  # fmt: skip
    except ExportError as exc:
        raise Invalid(
            f"Cannot export this selection: {exc}.",
            detail=[{"loc": ["body", "selection"], "msg": str(exc)}],
        ) from exc
