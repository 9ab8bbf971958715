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
"""

from __future__ import annotations

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
STEP_METADATA_KEYS = ("frame", "input", "timing", "info")

EPISODES_DIR = "episodes"
EXPORTS_DIR = "exports"


def episode_dir(data_root: Path, study_id: int | str, episode_id: str) -> Path:
    """Folder of one episode's envlogger log."""
    return Path(data_root) / EPISODES_DIR / str(study_id) / episode_id


def export_dir(data_root: Path, job_id: int | str) -> Path:
    """Folder of one export job's output."""
    return Path(data_root) / EXPORTS_DIR / str(job_id)
