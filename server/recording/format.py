"""The on-disk recording format: one envlogger (Riegeli) log per episode.

Everything that reads or writes episode logs takes its names from here.

Log layout (``episode_dir``)::

    <data_root>/episodes/<study_id>/<episode_id>/   envlogger Riegeli files

Log-level metadata (``EnvLogger(metadata=...)``, written when the episode starts, so it
survives a crash) is :data:`EPISODE_METADATA_KEYS` - episode id, study, environment and its
config (JSON text), seed and :data:`FORMAT_VERSION`.

Each recorded dm_env timestep carries step metadata with :data:`STEP_METADATA_KEYS`:

``frame``
    The JPEG bytes of the frame rendered at this timestep's observation (what the player saw).
``input``
    JSON text of the raw browser input that produced the action *stored in this timestep*
    (envlogger stores a_{t-1} with o_t; the exporter moves both to step t-1). ``"null"`` on FIRST.
``timing``
    JSON text of timestamps in milliseconds since the epoch: ``input_sent`` (client),
    ``input_recv`` (server), ``applied`` (worker, after env.step), ``seen_step`` (the index of
    the step whose frame was on the player's screen), and ``acks``: a list of
    ``[step_index, frame_sent_ms, frame_drawn_ms]`` for earlier steps whose frames were
    sent/drawn since the previous record (frames are sent after a step is recorded, so their
    times arrive later). Unknown times are absent.
``info``
    JSON text of the environment's ``info`` dict (non-JSON values as ``repr``).
``control``
    Shared autonomy (``server/runtime/autonomy.py``): JSON text about the action stored in
    this timestep, like ``input`` - ``{"source": "human" | "policy", "human": [...],
    "policy": [...] | null}``: who chose it, the player's mapped action and the policy's
    proposal (both flattened; ``policy`` null when it proposed nothing). ``"null"`` on FIRST
    and in episodes without a policy (absent in logs from before it existed): the player
    drove every step.
"""

from __future__ import annotations

import time
from pathlib import Path

FORMAT_VERSION = 1

EPISODE_METADATA_KEYS = (
    "format_version",
    "episode_id",
    "study_id",
    "env_id",
    "env_config",  # JSON text of the EnvironmentSpec
    "seed",
)
STEP_METADATA_KEYS = ("frame", "input", "timing", "info", "control")

# Envlogger *episode* metadata (``Reader.episode_metadata()``), written when the worker
# finalizes the episode; absent when the worker was killed before that (read such a log by
# its steps: its episode index is empty too).
EPISODE_END_METADATA_KEYS = ("episode_id", "end_reason", "num_steps", "total_reward")
# end_reason values set by the runtime; the app may pass its own to ``end_episode``
# (e.g. "canceled", "abandoned"). Only END_TERMINATED means the env terminated.
END_TERMINATED = "terminated"
END_TRUNCATED = "truncated"  # the environment's own time limit
END_MAX_STEPS = "max_steps"  # the study's max_steps
END_MAX_DURATION = "max_duration"  # the study's max_duration_s
END_FAILED = "failed"  # the environment raised
END_REPLACED = "replaced"  # a new episode began before this one ended
END_CLOSED = "closed"  # the worker was closed mid-episode
END_PARTICIPANT = "participant"  # the participant ended it ("I'm done"): a truncation
# Extra ``timing`` keys written by the worker besides the ones above: ``worker_recv``
# (ms since the epoch when the worker received the input) and ``jpeg_quality`` (the JPEG
# quality this timestep's frame was encoded and streamed at: 50, 75 or 90; it changes with
# the player's choice and the adaptive stream, never the observation); ``camera`` (the
# name of the camera this timestep's frame was rendered from, in environments with several:
# the player may switch; the observation is the same whichever is shown); in async mode
# ``speed``, the clock's speed factor in force (1 = the environment's fps).

EPISODES_DIR = "episodes"
DEFERRED_FILE = "deferred.json"


def episode_dir(data_root: Path, study_id: int | str, episode_id: str) -> Path:
    """Folder of one episode's envlogger log."""
    return Path(data_root) / EPISODES_DIR / str(study_id) / episode_id


def deferred_path(log_dir: Path) -> Path:
    """The note in an episode's log folder naming the observation keys its steps hold as
    placeholders, still to be drawn from the recorded states (:mod:`.deferred`)."""
    return Path(log_dir) / DEFERRED_FILE


def completing_dir(log_dir: Path) -> Path:
    """Beside a log folder: its log being written again with the deferred keys drawn."""
    return log_dir.parent / f"{log_dir.name}.complete"


def replaced_dir(log_dir: Path) -> Path:
    """Beside a log folder: the log with placeholders while the complete one takes its
    place (gone once it has)."""
    return log_dir.parent / f"{log_dir.name}.live"


def episode_video_path(log_dir: Path, log_stamp: str) -> Path:
    """The video kept beside an episode's log folder for one state of its log."""
    return log_dir.parent / f"{log_dir.name}.{log_stamp}.mp4"


def episode_video_lock(log_dir: Path) -> Path:
    """The lock file beside an episode's log folder that one maker of its video holds."""
    return log_dir.parent / f"{log_dir.name}.video.lock"


def episode_videos(log_dir: Path) -> list[Path]:
    """Videos kept beside an episode's log folder (:func:`episode_video_path`)."""
    return sorted(log_dir.parent.glob(f"{log_dir.name}.*.mp4"))


def now_ms() -> float:
    """Wall-clock milliseconds since the epoch (the unit of step ``timing``)."""
    return time.time() * 1000.0
