"""Episode videos for the replay page and the API: an MP4 of what the player saw, each frame
at its recorded time (server/export/episode_video.py), written to a temporary file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from server.errors import Conflict, Invalid, NotFound
from server.export.episode_video import video_of_log
from server.export.errors import ExportError
from server.models import Episode, EpisodeStatus


def episode_video(episode: Episode, log_dir: Path) -> Path:
    """A temporary MP4 of the episode (the caller deletes it); 4xx when there is none."""
    if episode.status == EpisodeStatus.recording:
        raise Conflict("The episode is still being recorded; its video is made once it ends.")
    if not log_dir.is_dir():
        raise NotFound(f"Episode {episode.id} has no log on disk.")
    fd, name = tempfile.mkstemp(prefix=f"episode-{episode.id}-", suffix=".mp4")
    os.close(fd)
    Path(name).unlink()  # PyAV creates the file
    try:
        return video_of_log(log_dir, Path(name))
    except ExportError as exc:
        Path(name).unlink(missing_ok=True)
        raise Invalid(
            f"No video for episode {episode.id}: {exc}.",
            detail=[{"loc": ["path", "episode_id"], "msg": str(exc)}],
        ) from exc
