"""What every export format shares: the job's input, options and result, progress and cancel,
and the writer loop. Imports no format (they import it: server/export/registry.py).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

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
from server.export.fields import ENDED_BY_TAG, specs_signature
from server.export.judgements import JudgementSummary
from server.export.narration import NarratedSpan, narration_column
from server.export.tags import TaggedSpan, first_end_step, validate_step_tags
from server.recording import deferred

if TYPE_CHECKING:
    from server.export.regenerate import Regeneration

ProgressFn = Callable[[int, int, int], None]
CancelFn = Callable[[], bool]
T = TypeVar("T")
DEFAULT_MAX_SHARD_BYTES = 200 * 1024 * 1024


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


def prepare(
    ep: EpisodeInput,
    options: ExportOptions,
    *,
    cut: bool = True,
    reference: Reference | None = None,
) -> RldsEpisode:
    """One episode read as RLDS steps, checked against ``reference`` (when given), its step
    tags checked and (``cut``) ended at its first end tag as the options say."""
    check_complete(ep)
    episode = read_episode(ep.log_dir)
    if reference is not None:
        reference.check(ep, episode.specs, episode.log_metadata)
    validate_step_tags(ep.step_tags, len(episode), ep.episode_id)
    end = first_end_step(ep.step_tags, options.end_tags) if cut else None
    return episode if end is None else episode.truncated_at(end)


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


def for_each_episode(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    write: Callable[[int, EpisodeInput, RldsEpisode], None],
    progress: ProgressFn | None,
    cancel: CancelFn | None,
    *,
    cut: bool = True,
    reference: Reference | None = None,
) -> list[ExportedEpisode]:
    """The writer loop: ``write(i, ep, episode)`` for each episode read (checked and cut, see
    :func:`prepare`); errors it raises name the episode. Polls ``cancel`` between episodes,
    tells ``progress`` after each; returns the episodes' summaries."""
    summaries: list[ExportedEpisode] = []
    steps_done = 0
    for i, ep in enumerate(episodes):
        check_cancel(cancel)
        with naming(ep.episode_id):
            episode = prepare(ep, options, cut=cut, reference=reference)
            write(i, ep, episode)
        summaries.append(summarize(ep, episode))
        steps_done += len(episode)
        if progress is not None:
            progress(i + 1, len(episodes), steps_done)
    check_cancel(cancel)
    return summaries


MAX_EXPORT_THREADS = 64


def export_threads() -> int:
    """Episodes read and encoded at once by :func:`for_each_encoded` (each one in flight is
    held in memory whole): ``STUDIO_EXPORT_THREADS`` when set (1 to 64), else the cores this
    process may use, at most 4."""
    text = os.environ.get("STUDIO_EXPORT_THREADS", "").strip()
    if text:
        if not text.isdigit() or not 1 <= int(text) <= MAX_EXPORT_THREADS:
            raise ExportError(
                f"STUDIO_EXPORT_THREADS={text!r}: give a whole number from 1 to "
                f"{MAX_EXPORT_THREADS}"
            )
        return int(text)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def for_each_encoded(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    encode: Callable[[EpisodeInput, RldsEpisode], T],
    write: Callable[[int, EpisodeInput, RldsEpisode, T], None],
    progress: ProgressFn | None,
    cancel: CancelFn | None,
    *,
    cut: bool = True,
    reference: Reference | None = None,
    threads: int | None = None,
) -> list[ExportedEpisode]:
    """:func:`for_each_episode` with the reading and ``encode(ep, episode)`` of the next
    episodes in worker threads (``threads``, else :func:`export_threads`), while
    ``write(i, ep, episode, encoded)`` runs here, in the episodes' order: the output is the
    same as one at a time. What releases the GIL (log reading, image codecs, compression)
    runs on several cores; at most ``threads`` episodes are in memory at once."""
    n = threads or export_threads()

    def work(ep: EpisodeInput) -> tuple[RldsEpisode, T]:
        with naming(ep.episode_id):
            episode = prepare(ep, options, cut=cut, reference=reference)
            return episode, encode(ep, episode)

    summaries: list[ExportedEpisode] = []
    steps_done = 0
    todo = iter(enumerate(episodes))
    pending: deque[tuple[int, EpisodeInput, Future[tuple[RldsEpisode, T]]]] = deque()
    with ThreadPoolExecutor(n, thread_name_prefix="export") as pool:
        try:
            while True:
                while len(pending) < n and (item := next(todo, None)) is not None:
                    check_cancel(cancel)
                    pending.append((item[0], item[1], pool.submit(work, item[1])))
                if not pending:
                    break
                i, ep, future = pending.popleft()
                episode, encoded = future.result()
                check_cancel(cancel)
                with naming(ep.episode_id):
                    write(i, ep, episode, encoded)
                summaries.append(summarize(ep, episode))
                steps_done += len(episode)
                del episode, encoded
                if progress is not None:
                    progress(i + 1, len(episodes), steps_done)
        finally:
            for _i, _ep, future in pending:
                future.cancel()
    check_cancel(cancel)
    return summaries


@dataclass(frozen=True)
class WriteJob:
    """What a format's writer is given: the episodes and options, the first episode's
    environment (which each episode is checked against as it is read, see
    :class:`Reference`), the step tag names that become fields, the new empty folder to write
    into, and the job's progress and cancel (see :func:`for_each_episode`)."""

    episodes: Sequence[EpisodeInput]
    options: ExportOptions
    reference: Reference
    tag_names: Sequence[str]
    out: Path
    progress: ProgressFn | None = None
    cancel: CancelFn | None = None

    @property
    def specs(self) -> EnvSpecs:
        """The episodes' common specs."""
        return self.reference.specs

    def each_episode(
        self, write: Callable[[int, EpisodeInput, RldsEpisode], None], *, cut: bool = True
    ) -> list[ExportedEpisode]:
        """The writer loop (:func:`for_each_episode`) over this job's episodes."""
        return for_each_episode(
            self.episodes,
            self.options,
            write,
            self.progress,
            self.cancel,
            cut=cut,
            reference=self.reference,
        )

    def each_encoded(
        self,
        encode: Callable[[EpisodeInput, RldsEpisode], T],
        write: Callable[[int, EpisodeInput, RldsEpisode, T], None],
        *,
        cut: bool = True,
        threads: int | None = None,
    ) -> list[ExportedEpisode]:
        """The writer loop with reading and ``encode`` in threads (:func:`for_each_encoded`;
        ``threads``: as many, else :func:`export_threads`)."""
        return for_each_encoded(
            self.episodes,
            self.options,
            encode,
            write,
            self.progress,
            self.cancel,
            cut=cut,
            reference=self.reference,
            threads=threads,
        )
