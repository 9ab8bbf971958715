"""Episode videos: what the player saw (the recorded frames) at the recorded step times."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from server.export.episode import RldsEpisode, read_episode
from server.export.errors import ExportCanceledError, ExportError, InvalidEpisodeError
from server.export.export_job import CancelFn, EpisodeInput, ExportOptions, _prepare, naming
from server.export.lerobot_job import step_times_ms
from server.export.video import PLAYABLE, Profile, decode_jpeg, write_video

VIDEOS_DIR = "episode_videos"


def episode_video(episode: RldsEpisode, path: Path, profile: Profile = PLAYABLE) -> Path:
    """Write the episode's frames as an MP4 at ``path``; steps without a frame are skipped."""
    times = step_times_ms(episode)
    shown = [(t, data) for t, data in zip(times, episode.frames, strict=True) if data]
    if not shown:
        raise InvalidEpisodeError("the episode has no recorded frame")
    start = shown[0][0]
    try:
        return write_video(
            path,
            (decode_jpeg(data) for _t, data in shown),
            [t - start for t, _data in shown],
            profile,
        )
    except ValueError as exc:
        raise ExportError(f"cannot encode the video: {exc}") from exc


def write_episode_videos(
    episodes: Sequence[EpisodeInput], options: ExportOptions, out: Path, cancel: CancelFn | None
) -> list[Path]:
    """``out/episode_videos/<episode_id>.mp4`` for each episode (cut as the export is)."""

    paths = []
    for ep in episodes:
        if cancel is not None and cancel():
            raise ExportCanceledError("the export was canceled")
        with naming(ep.episode_id):
            episode = _prepare(ep, options)
            paths.append(episode_video(episode, out / VIDEOS_DIR / f"{ep.episode_id}.mp4"))
    return paths


def video_of_log(log_dir: Path, path: Path) -> Path:
    """The MP4 of one recorded episode log (the API's episode video)."""
    return episode_video(read_episode(log_dir), path)
