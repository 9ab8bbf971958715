"""The writer loop every format runs: each episode read (checked, cut, named in its errors:
:func:`server.export.base.prepare`), written in order, the job's progress told and its
cancel polled; one at a time, or read and encoded ahead in threads while the writing stays in
order. :class:`WriteJob` is what a format's writer is given.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from server.export.base import (
    CancelFn,
    EpisodeInput,
    ExportOptions,
    ProgressFn,
    Reference,
    check_cancel,
    naming,
    read_for_writing,
    splits_of,
    summarize,
)
from server.export.card import ExportedEpisode
from server.export.episode import EnvSpecs, RldsEpisode
from server.export.errors import ExportError

T = TypeVar("T")


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
            ep, episode = read_for_writing(ep, options, cut=cut, reference=reference)
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

    def work(ep: EpisodeInput) -> tuple[EpisodeInput, RldsEpisode, T]:
        with naming(ep.episode_id):
            ep, episode = read_for_writing(ep, options, cut=cut, reference=reference)
            return ep, episode, encode(ep, episode)

    summaries: list[ExportedEpisode] = []
    steps_done = 0
    todo = iter(enumerate(episodes))
    pending: deque[tuple[int, EpisodeInput, Future[tuple[EpisodeInput, RldsEpisode, T]]]]
    pending = deque()
    with ThreadPoolExecutor(n, thread_name_prefix="export") as pool:
        try:
            while True:
                while len(pending) < n and (item := next(todo, None)) is not None:
                    check_cancel(cancel)
                    pending.append((item[0], item[1], pool.submit(work, item[1])))
                if not pending:
                    break
                i, ep, future = pending.popleft()
                ep, episode, encoded = future.result()
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

    @property
    def splits(self) -> list[str]:
        """The dataset splits the episodes fill, in order ([]: a study's export, no splits)."""
        return splits_of(self.episodes)

    def parts(self) -> Iterator[tuple[str, WriteJob]]:
        """For a format that writes one dataset (or folder) per split: each split, in order,
        with this job over that split's episodes; the progress counts on across them."""
        total = len(self.episodes)
        base, last = [0, 0], [0, 0]
        for split in self.splits:
            part = [ep for ep in self.episodes if ep.split_name == split]

            def report(d: int, _t: int, s: int, b: tuple[int, int] = (base[0], base[1])) -> None:
                last[:] = [b[0] + d, b[1] + s]
                if self.progress is not None:
                    self.progress(b[0] + d, total, b[1] + s)

            yield split, replace(self, episodes=part, progress=report)
            base[:] = [base[0] + len(part), last[1]]

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
