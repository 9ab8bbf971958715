"""Episode videos: what the player saw (the recorded frames) at the recorded step times."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from server.export.base import CancelFn, EpisodeInput, ExportOptions
from server.export.episode import RldsEpisode
from server.export.errors import ExportError, InvalidEpisodeError
from server.export.loop import for_each_episode
from server.export.timings import step_timing, time_or_unknown
from server.export.video import (
    PLAYABLE,
    Profile,
    decode_jpeg,
    interval_ms,
    monotonic_ms,
    step_times_ms,
    write_video,
)
from server.recording.envlogger_log import envlogger

VIDEOS_DIR = "episode_videos"


def episode_video(episode: RldsEpisode, path: Path, profile: Profile = PLAYABLE) -> Path:
    """Write the episode's frames as an MP4 at ``path``; steps without a frame are skipped."""
    times = step_times_ms(episode.observed_ms)
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

    def write(_i: int, ep: EpisodeInput, episode: RldsEpisode) -> None:
        paths.append(episode_video(episode, out / VIDEOS_DIR / f"{ep.episode_id}.mp4"))

    for_each_episode(episodes, options, write, None, cancel)
    return paths


def video_of_log(log_dir: Path, path: Path, max_steps: int | None = None) -> Path:
    """The MP4 of one recorded episode log (the API's episode video), in constant memory.

    Two passes over the log, one step at a time: the first reads each step's time (the
    times of unknown steps need the median interval of them all), the second decodes each
    frame and hands it to the encoder. Neither keeps observations or frames: memory does not
    grow with the episode. A log longer than ``max_steps`` is refused (an operator's limit).
    """
    try:
        with envlogger.Reader(str(log_dir)) as reader:
            observed: list[float] = []
            framed = bytearray()  # 1 where a step has a frame
            for step in reader.steps:
                observed.append(time_or_unknown(step_timing(step).get("applied")))
                framed.append(1 if (step.custom_data or {}).get("frame") else 0)
                if max_steps is not None and len(observed) > max_steps:
                    raise ExportError(
                        f"the episode is longer than the video limit of {max_steps} steps "
                        "(STUDIO_VIDEO_MAX_STEPS)"
                    )
            if not observed:
                raise InvalidEpisodeError("the episode's log holds no step")
            times = monotonic_ms(observed, interval_ms(observed))
            shown = [t for t, has in zip(times, framed, strict=True) if has]
            if not shown:
                raise InvalidEpisodeError("the episode has no recorded frame")
            frames = (
                decode_jpeg(bytes(step.custom_data["frame"]))
                for step, has in zip(reader.steps, framed, strict=False)
                if has
            )
            try:
                return write_video(path, frames, [t - shown[0] for t in shown], PLAYABLE)
            except ValueError as exc:
                raise ExportError(f"cannot encode the video: {exc}") from exc
    except ExportError:
        raise
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors/ValueErrors
        raise InvalidEpisodeError(f"cannot read the episode log at {log_dir}: {exc}") from exc
