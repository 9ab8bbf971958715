"""Episode videos for the replay page and the API: an MP4 of what the player saw, each frame
at its recorded time (server/export/episode_video.py).

Encoding costs CPU that players share, so a video is made once and kept beside its log
folder as ``<episode id>.<log stamp>.mp4``. The stamp (the log files' sizes and times)
changes if the log still changes after the episode's row ended (a dead replica's worker
finalizing it), so a video never shows an older log. Deleting the episode's logs deletes its
videos (``studies.remove_episode_logs``).

A video is made in constant memory (step by step from the log), once however many ask at
once: the first request takes a lock file beside the log folder (``flock``: other threads
and processes of the host wait on it, then find the video made), draws one slot from the
background budget (server/core/budget.py) and encodes. An episode longer than
``STUDIO_VIDEO_MAX_STEPS`` gets 422 instead of an encode.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from server.core.budget import ProcessBudget
from server.errors import Conflict, Invalid, NotFound
from server.export.episode_video import video_of_log
from server.export.errors import ExportError
from server.models import Episode, EpisodeStatus
from server.recording.format import episode_video_lock, episode_video_path, episode_videos


def _log_stamp(log_dir: Path) -> str:
    """Changes whenever a file of the log folder does (sizes and modification times)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in log_dir.iterdir() if p.is_file()):
        info = path.stat()
        digest.update(f"{path.name}:{info.st_size}:{info.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


@contextmanager
def _single_flight(log_dir: Path) -> Iterator[None]:
    """Held by one maker of this log's video at a time (threads and processes alike)."""
    with open(episode_video_lock(log_dir), "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def episode_video(
    episode: Episode,
    log_dir: Path,
    budget: ProcessBudget | None = None,
    max_steps: int | None = None,
) -> Path:
    """The episode's MP4, made on first use and kept; 4xx when there is none (503 when
    ``budget`` has no room)."""
    if episode.status == EpisodeStatus.recording:
        raise Conflict("The episode is still being recorded; its video is made once it ends.")
    if not log_dir.is_dir():
        raise NotFound(f"Episode {episode.id} has no log on disk.")
    if max_steps is not None and (episode.steps or 0) > max_steps:
        raise _too_long(episode, max_steps)
    path = episode_video_path(log_dir, _log_stamp(log_dir))
    if path.is_file():
        return path
    with _single_flight(log_dir):
        path = episode_video_path(log_dir, _log_stamp(log_dir))
        if path.is_file():  # made while this request waited
            return path
        with budget.slots(1, what="video") if budget else nullcontext():
            return _make(episode, log_dir, path, max_steps)


def _too_long(episode: Episode, max_steps: int) -> Invalid:
    msg = f"longer than the video limit of {max_steps} steps (STUDIO_VIDEO_MAX_STEPS)"
    return Invalid(
        f"No video for episode {episode.id}: it is {msg}.",
        detail=[{"loc": ["path", "episode_id"], "msg": msg}],
    )


def _make(episode: Episode, log_dir: Path, path: Path, max_steps: int | None) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{log_dir.name}-", suffix=".mp4", dir=log_dir.parent)
    os.close(fd)
    partial = Path(name)
    partial.unlink()  # PyAV creates the file
    try:
        video_of_log(log_dir, partial, max_steps)
    except ExportError as exc:
        partial.unlink(missing_ok=True)
        raise Invalid(
            f"No video for episode {episode.id}: {exc}.",
            detail=[{"loc": ["path", "episode_id"], "msg": str(exc)}],
        ) from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    for stale in episode_videos(log_dir):  # made from an earlier state of the log
        stale.unlink(missing_ok=True)
    os.replace(partial, path)  # whole or absent: a concurrent request never reads half a file
    return path
