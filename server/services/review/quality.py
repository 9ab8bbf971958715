"""Quality signals of an episode, computed once when it ends, and each environment's median
length.

Signals (columns of ``episodes``; ``quality_at`` is when they were computed, NULL: "not
computed", an episode recorded before they existed - ``rlds-studio quality`` computes them):

``idle_share``
    Share of the episode's actions whose recorded raw input held no control (no key, no
    button over half-way, no axis past half) - 0 to 1; NULL without any action.
``inputs_per_s``
    Controls newly pressed (from one action's input to the next) per second of the episode's
    ``duration_s`` (from the player's ``go`` to its end); NULL without a duration.
``latency_p50_ms`` / ``latency_p95_ms`` / ``latency_p99_ms``
    Input latency percentiles: from the client sending an input to drawing the frame it
    produced. At the player's finalization they come from every acknowledged frame the
    session measured; otherwise (crash recovery, backfill) from the acknowledgements the log
    holds (the last frames' may be missing).
``frames_dropped``
    Frames the player never got (counted by the session; the log does not know them).
``interventions`` / ``intervention_share``
    Shared autonomy (NULL without a policy): times the player took control from a working
    policy, and the share of actions the player drove (0 to 1).

The median length of an environment's completed episodes is cached on its
``study_environments`` row (``median_steps``): refreshed whenever an episode of it ends or
episodes are deleted, so listing and filtering by "k x the median" costs no aggregate over
the study's episodes (on 100,000 episodes that aggregate alone would take most of a page's
time budget).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import Episode, EpisodeStatus, ReplayVerdict, StudyEnvironment, utcnow
from server.recording.signals import InputCounts, Signals, held_controls
from server.services.review.replay_step import finite

if TYPE_CHECKING:
    from server.export.episode import RldsEpisode

log = logging.getLogger(__name__)

# Badge thresholds (the list's badges; filters take their own numbers)
IDLE_BADGE = 0.5  # idle share at or above
SLOW_P99_MS = 100.0  # p99 input latency at or above
SHORT_RATIO = 0.5  # steps under this times the environment's median
LONG_RATIO = 2.0  # steps over this times the environment's median


def from_steps(
    inputs: Iterable[Any], latencies_ms: Sequence[float], duration_s: float | None
) -> Signals:
    """Signals from each action's raw input (JSON text or data, in order), the measured input
    latencies and the episode's duration."""
    counts = InputCounts()
    for raw in inputs:
        counts.add(held_controls(raw))
    return counts.signals(latencies_ms, duration_s)


def read_log(storage_path: Path | str) -> RldsEpisode | None:
    """An episode's log as RLDS steps; None when it is missing, empty or unreadable."""
    from server.export.episode import read_episode  # reads envlogger logs; imported lazily

    try:
        return read_episode(Path(storage_path))
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors/ValueErrors
        log.warning("episode log %s not readable (%s)", storage_path, exc)
        return None


def from_recorded(recorded: RldsEpisode, duration_s: float | None) -> Signals:
    """Signals from a read log (the latency from the frame acknowledgements it holds)."""
    latencies = [
        float(value)
        for timing in recorded.timings
        if (value := finite(timing.get("input_latency_ms"))) is not None and value >= 0
    ]
    # the last RLDS step has no action (its input is a zero-filled "null")
    counts = InputCounts()
    for raw in recorded.inputs[:-1]:
        counts.add(held_controls(raw))
    if recorded.autonomous:
        previous = None
        for t in range(len(recorded) - 1):
            policy = recorded.control_sources[t] == 1
            taken = not policy and previous is True and recorded.has_policy_action[t]
            counts.drove(policy, counts.takeovers + int(taken))
            previous = policy
    return counts.signals(latencies, duration_s)


def from_log(storage_path: Path | str, duration_s: float | None) -> Signals | None:
    """Signals from an episode's envlogger log; None when the log cannot be read."""
    recorded = read_log(storage_path)
    return None if recorded is None else from_recorded(recorded, duration_s)


def apply(episode: Episode, signals: Signals | None) -> None:
    """Store ``signals`` on the row (None: nothing could be measured) and stamp
    ``quality_at``."""
    if signals is not None:
        for column, value in signals.columns().items():
            setattr(episode, column, value)
    episode.quality_at = utcnow()


def compute(episode: Episode) -> None:
    """Signals of an ended episode from its log."""
    recorded = read_log(episode.storage_path) if episode.steps else None
    apply(episode, None if recorded is None else from_recorded(recorded, episode.duration_s))


# --- environment medians --------------------------------------------------------------------
def median_steps(db: Session, study_env_id: int) -> float | None:
    """The median length of an environment's completed episodes (None without any): two index
    lookups on (study_env_id, status, steps), no sort of the episodes."""
    where = (Episode.study_env_id == study_env_id, Episode.status == EpisodeStatus.completed)
    n = db.scalar(select(func.count()).where(*where)) or 0
    if not n:
        return None
    middle = db.scalars(
        select(Episode.steps).where(*where).order_by(Episode.steps).offset((n - 1) // 2).limit(2)
    ).all()
    pair = middle if n % 2 == 0 else middle[:1]
    return float(sum(pair)) / len(pair)


def refresh_medians(db: Session, study_env_ids: Iterable[int]) -> None:
    """Recompute the cached medians of these environments (commit left to the caller)."""
    for env_id in set(study_env_ids):
        row = db.get(StudyEnvironment, env_id)
        if row is not None:
            row.median_steps = median_steps(db, env_id)


def medians(db: Session, study_id: int) -> dict[int, float]:
    """study_env_id -> cached median length, for a study's environments that have one."""
    rows = db.execute(
        select(StudyEnvironment.id, StudyEnvironment.median_steps).where(
            StudyEnvironment.study_id == study_id, StudyEnvironment.median_steps.is_not(None)
        )
    ).tuples()
    return {int(i): float(m) for i, m in rows if m is not None}


def badges(episode: Episode, median: float | None) -> list[dict[str, str]]:
    """The list's badges of an episode: ``{"flag", "label"}`` (see the thresholds above)."""
    out: list[dict[str, str]] = []
    if episode.idle_share is not None and episode.idle_share >= IDLE_BADGE:
        out.append({"flag": "idle", "label": f"idle {round(episode.idle_share * 100)}%"})
    if episode.latency_p99_ms is not None and episode.latency_p99_ms >= SLOW_P99_MS:
        out.append({"flag": "slow", "label": f"p99 {round(episode.latency_p99_ms)} ms"})
    if episode.frames_dropped:
        out.append({"flag": "dropped", "label": f"{episode.frames_dropped} dropped"})
    if episode.interventions:
        share = round((episode.intervention_share or 0) * 100)
        out.append(
            {"flag": "intervened", "label": f"took over {episode.interventions}× ({share}%)"}
        )
    if episode.policy_error:
        out.append({"flag": "policy_failed", "label": "policy failed"})
    if episode.replay_verdict == ReplayVerdict.diverged:
        # its replay did not reproduce the log (server/services/jobs/replay_checks.py)
        out.append({"flag": "diverged", "label": "replay diverged"})
    if median and episode.status != EpisodeStatus.recording:
        if episode.steps < SHORT_RATIO * median:
            out.append({"flag": "short", "label": "short"})
        elif episode.steps > LONG_RATIO * median:
            out.append({"flag": "long", "label": "long"})
    return out


# --- backfill -----------------------------------------------------------------------------
def backfill(db: Session, study_id: int | None = None, *, recompute: bool = False) -> int:
    """Compute the signals of ended episodes that have none (``recompute``: of every ended
    episode) from their logs, then refresh the medians; returns how many were computed."""
    query = select(Episode).where(Episode.status != EpisodeStatus.recording)
    if study_id is not None:
        query = query.where(Episode.study_id == study_id)
    if not recompute:
        query = query.where(Episode.quality_at.is_(None))
    done = 0
    envs: set[int] = set()
    for episode in db.scalars(query.order_by(Episode.id)).all():
        compute(episode)
        envs.add(episode.study_env_id)
        done += 1
        if done % 100 == 0:
            db.commit()
    refresh_medians(db, envs)
    db.commit()
    return done
