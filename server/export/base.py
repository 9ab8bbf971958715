"""What every export format shares: the job's input, options and result, progress and cancel,
and one episode read for writing (the loop that writes them: server/export/loop.py).
Imports no format (they import it: server/export/registry.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.export import registry
from server.export.beam_config import BeamConfig
from server.export.card import ExportedEpisode
from server.export.episode import EnvSpecs, RldsEpisode, read_episode
from server.export.errors import (
    ExportCanceledError,
    ExportError,
    IncompatibleEnvironmentsError,
    InvalidEpisodeError,
)
from server.export.fields import ENDED_BY_TAG, ENDED_BY_TRIM, specs_signature
from server.export.judgements import JudgementSummary
from server.export.narration import NarratedSpan, narration_column
from server.export.tags import TaggedSpan, first_end_step, validate_step_tags
from server.recording import deferred

if TYPE_CHECKING:
    from server.export.regenerate import Regeneration

ProgressFn = Callable[[int, int, int], None]
CancelFn = Callable[[], bool]
DEFAULT_MAX_SHARD_BYTES = 200 * 1024 * 1024
SPLITS = ("train", "validation", "test")  # a dataset's splits, in the order they are written


@dataclass(frozen=True)
class EpisodeInput:
    """One episode to export: its log and its database-side metadata."""

    log_dir: Path
    episode_id: str
    agent_id: str  # salted hash of the participant
    status: str = "completed"
    tags: tuple[str, ...] = ()
    step_tags: tuple[TaggedSpan, ...] = ()
    notes: str = ""
    # the episode's language instruction: its task's where it drew one, else the
    # environment's (else the study's) instructions; "" when there is none
    instruction: str = ""
    task_id: str = ""  # the task it drew (the environment's ``tasks``); "": none
    # what happened over ranges of its steps (server/export/narration.py), by start step
    narrations: tuple[NarratedSpan, ...] = ()
    # "success" / "failure" / "" (unset): the effective outcome (the reviewer's, else the
    # player's) and both sources
    outcome: str = ""
    player_outcome: str = ""
    reviewer_outcome: str = ""
    # the replay check's verdict (pending / verified / diverged / not_replayable), the RLDS
    # step it diverged at or could not replay (-1: none) and what it found ("": nothing);
    # server/services/review/verdicts.py turns the checker's steps into RLDS steps
    replay_verdict: str = "pending"
    replay_step: int = -1
    replay_message: str = ""
    # what feedback studies' judgements say of it (server/export/judgements.py; zeros: none)
    judgements: JudgementSummary = field(default_factory=JudgementSummary)
    # how it ended (server/export/fields.py, ENDING_FIELDS; "": not recorded)
    ended_by: str = ""
    env_outcome: str = ""
    # the dataset split it belongs to (train / validation / test; a dataset's export,
    # server/services/datasets/exports.py); "": a study's export, every episode in train
    split: str = ""
    # RLDS steps a dataset's trim drops first and last (server/services/datasets/edits.py;
    # applied where the episode is read: read_for_writing)
    trim: tuple[int, int] = (0, 0)

    @property
    def split_name(self) -> str:
        """The split it is written to: its own, else train."""
        return self.split or SPLITS[0]

    def kept(self, num_steps: int) -> EpisodeInput:
        """This input for its episode of ``num_steps`` recorded steps after its trim: step
        tags and narrations moved to the kept steps' indices (clipped to them, left out
        where they cover none), the replay step too (-1 outside them), no trim left."""
        start, end = self.trim
        if (start, end) == (0, 0):
            return self
        last = num_steps - 1 - start - end

        def moved(a: int, b: int) -> tuple[int, int] | None:
            a, b = max(a - start, 0), min(b - start, last)
            return (a, b) if a <= b else None

        tags = [(t, m) for t in self.step_tags if (m := moved(t.start, t.end))]
        spans = [(n, m) for n in self.narrations if (m := moved(n.start, n.end))]
        step = self.replay_step - start
        return replace(
            self,
            trim=(0, 0),
            step_tags=tuple(replace(t, start=m[0], end=m[1]) for t, m in tags),
            narrations=tuple(replace(n, start=m[0], end=m[1]) for n, m in spans),
            replay_step=step if self.replay_step >= 0 and 0 <= step <= last else -1,
        )

    def outcome_fields(self) -> dict[str, str]:
        """The episode-level outcome fields every format exports."""
        return {
            "outcome": self.outcome,
            "player_outcome": self.player_outcome,
            "reviewer_outcome": self.reviewer_outcome,
        }

    def task_fields(self) -> dict[str, str]:
        """The episode-level task fields every format exports (text, "" when none)."""
        return {"task_id": self.task_id, "language_instruction": self.instruction}

    def narration_column(self, num_steps: int) -> list[str]:
        """Each step's narration (the join rule: server/export/narration.py)."""
        return narration_column(self.narrations, num_steps)

    def replay_fields(self) -> dict[str, str | int]:
        """The episode-level replay verdict fields every format exports."""
        return {
            "replay_verdict": self.replay_verdict,
            "replay_step": self.replay_step,
            "replay_message": self.replay_message,
        }

    def ending_fields(self, episode: RldsEpisode) -> dict[str, str]:
        """The episode-level fields of how ``episode`` (this one, read and maybe cut)
        ended: who ended it (``end_tag`` where an export's end tag cut it: what the
        environment reported then is not known) and the environment's outcome."""
        if episode.ended_at_tag:
            return {"ended_by": ENDED_BY_TAG, "env_outcome": ""}
        if episode.ended_at_trim:
            return {"ended_by": ENDED_BY_TRIM, "env_outcome": ""}
        return {"ended_by": self.ended_by, "env_outcome": self.env_outcome}

    def judgement_fields(self) -> dict[str, Any]:
        """The episode-level judgement summary fields every format exports."""
        return self.judgements.fields()


@dataclass(frozen=True)
class ExportOptions:
    """How to export.

    ``format``: a registered format's name (server/export/registry.py; by default its
    default format).
    ``step_tag_names``: the step tags that become ``tag:<name>`` fields (None: every name used
    by the episodes). ``end_tags``: step tag names that end an episode at their first tagged
    step (that step becomes the last one, not terminal; not in the envlogger format).
    """

    name: str = "rlds_studio"
    version: str = "1.0.0"
    format: str = field(default_factory=registry.default)
    keep_step_metadata: bool = True
    step_tag_names: tuple[str, ...] | None = None
    end_tags: tuple[str, ...] = ()
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES
    max_episodes_per_shard: int | None = None
    study: str = ""
    description: str = ""
    profile: str = ""  # one of the format's profiles (Format.profiles); "": none
    # formats that run on Beam (Format.on_beam): run as an Apache Beam pipeline with this
    # runner configuration (None: here, in this process). The output is the same either way.
    beam: BeamConfig | None = None
    videos: bool = False  # add episode_videos/<episode_id>.mp4 (what the player saw)
    # draw the observations again by replay, at another image size or from other cameras
    # (server/export/regenerate.py; run by server/export/runner.py's write_output)
    regenerate: Regeneration | None = None


@dataclass(frozen=True)
class ExportResult:
    """A finished export: where it is and what it holds."""

    path: Path
    format: str
    episodes: tuple[ExportedEpisode, ...]
    data_dir: Path | None = None  # the format's dataset folder (not the envlogger format's)
    shard_paths: tuple[Path, ...] = field(default_factory=tuple)

    @property
    def num_episodes(self) -> int:
        """Episodes exported."""
        return len(self.episodes)

    @property
    def num_steps(self) -> int:
        """RLDS steps exported (observations, including each episode's last)."""
        return sum(e.num_steps for e in self.episodes)


@dataclass(frozen=True)
class Reference:
    """The first selected episode's environment, which every episode of an export shares:
    each episode is checked against it where its log is read, so that a log is opened once."""

    episode_id: str
    env_id: str
    specs: EnvSpecs
    signature: object

    @classmethod
    def of(cls, ep: EpisodeInput, specs: EnvSpecs, meta: dict[str, Any]) -> Reference:
        """The reference of ``ep`` (its log's ``specs`` and metadata ``meta``), checked."""
        first = cls(ep.episode_id, str(meta.get("env_id", "?")), specs, signature=None)
        return replace(first, signature=first.check(ep, specs, meta))

    def check(self, ep: EpisodeInput, specs: EnvSpecs, meta: dict[str, Any]) -> object:
        """Raise unless ``ep``'s log (``specs``, metadata ``meta``) is episode ``ep`` and holds
        this environment's spaces; returns the specs' signature."""
        if specs.observation is None or specs.action is None:
            raise InvalidEpisodeError(f"episode {ep.episode_id}: its log holds no specs")
        logged_id = meta.get("episode_id")
        if logged_id is not None and str(logged_id) != ep.episode_id:
            raise InvalidEpisodeError(
                f"episode {ep.episode_id}: its log at {ep.log_dir} is episode {logged_id}"
            )
        signature = specs_signature(specs)
        if self.signature is not None and signature != self.signature:
            raise IncompatibleEnvironmentsError(
                "the selected episodes come from environments with different observation or "
                f"action spaces: episode {self.episode_id} ({self.env_id}) and episode "
                f"{ep.episode_id} ({meta.get('env_id', '?')}); export them separately"
            )
        return signature


def splits_of(episodes: Sequence[EpisodeInput]) -> list[str]:
    """The splits the episodes fill, in :data:`SPLITS` order; [] when none names one (a
    study's export: everything in train, written as it always was)."""
    if not any(ep.split for ep in episodes):
        return []
    used = {ep.split_name for ep in episodes}
    unknown = sorted(used - set(SPLITS))
    if unknown:
        raise ExportError(f"unknown split {unknown[0]!r}; splits: {', '.join(SPLITS)}")
    return [s for s in SPLITS if s in used]


def in_split_order(episodes: Sequence[EpisodeInput]) -> list[EpisodeInput]:
    """The episodes train first, then validation, then test (stable within a split)."""
    return sorted(episodes, key=lambda ep: SPLITS.index(ep.split_name))


def check_cancel(cancel: CancelFn | None) -> None:
    """End the job with :class:`ExportCanceledError` when ``cancel()`` says so."""
    if cancel is not None and cancel():
        raise ExportCanceledError("the export was canceled")


@contextmanager
def naming(episode_id: str) -> Iterator[None]:
    """Errors met while exporting one episode name it, so the user can leave it out."""
    try:
        yield
    except ExportError as exc:
        if str(exc).startswith(f"episode {episode_id}"):
            raise
        raise type(exc)(f"episode {episode_id}: {exc}") from exc
    except (ValueError, TypeError, OverflowError) as exc:  # from TFDS, on a value not checked
        raise ExportError(
            f"episode {episode_id}: cannot encode ({type(exc).__name__}: {exc})"
        ) from exc


def check_complete(ep: EpisodeInput) -> None:
    """Raise :class:`InvalidEpisodeError` while the episode's log still holds placeholders
    for observation values drawn in the background (server/recording/deferred.py)."""
    keys = deferred.pending(Path(ep.log_dir))
    if keys:
        raise InvalidEpisodeError(
            f"episode {ep.episode_id}: its observation images ({', '.join(keys)}) are still "
            "being drawn from the recorded simulator states in the background; export it "
            "once its replay check has run (its verdict is no longer pending)"
        )


def read_for_writing(
    ep: EpisodeInput,
    options: ExportOptions,
    *,
    cut: bool = True,
    reference: Reference | None = None,
) -> tuple[EpisodeInput, RldsEpisode]:
    """One episode read as RLDS steps, checked against ``reference`` (when given), its step
    tags checked, its dataset trim applied (:meth:`RldsEpisode.trimmed`) and (``cut``) ended
    at its first end tag as the options say; with the input as it fits the steps kept
    (:meth:`EpisodeInput.kept`), which is what a format writes."""
    check_complete(ep)
    episode = read_episode(ep.log_dir)
    if reference is not None:
        reference.check(ep, episode.specs, episode.log_metadata)
    validate_step_tags(ep.step_tags, len(episode), ep.episode_id)
    kept = ep.kept(len(episode))
    if ep.trim != (0, 0):
        episode = episode.trimmed(*ep.trim)
    end = first_end_step(kept.step_tags, options.end_tags) if cut else None
    return kept, (episode if end is None else episode.truncated_at(end))


def prepare(
    ep: EpisodeInput,
    options: ExportOptions,
    *,
    cut: bool = True,
    reference: Reference | None = None,
) -> RldsEpisode:
    """The episode :func:`read_for_writing` reads (without the input)."""
    return read_for_writing(ep, options, cut=cut, reference=reference)[1]


def summarize(ep: EpisodeInput, episode: RldsEpisode) -> ExportedEpisode:
    """What the card and the job's result say about one exported episode."""
    return ExportedEpisode(
        episode_id=ep.episode_id,
        env_id=str(episode.log_metadata.get("env_id", "")),
        status=ep.status,
        num_steps=len(episode),
        replay_verdict=ep.replay_verdict,
        task_id=ep.task_id,
        instruction=ep.instruction,
        narrations=len(ep.narrations),
        judged=ep.judgements.judged,
        ended_by=ep.ending_fields(episode)["ended_by"],
        total_reward=episode.total_reward,
        terminated=episode.terminated,
    )
