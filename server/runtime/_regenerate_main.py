"""The regeneration process: one recorded episode replayed with new image settings, written
as a new envlogger log (docs/export.md, "Regenerated observations").

``python -m server.runtime._regenerate_main`` in the environment's runtime interpreter
(started by :func:`server.export.regenerate.regenerate_log`, the way
:func:`server.runtime.replay_process.verify_log` starts the verification process). Reads a
pickled ``(allowed, log_dir, out_dir, settings, memory_mb)`` on stdin. The
environment is built from the spec the log was recorded with, its settings updated with
``settings`` (what :class:`server.runtime.regeneration.Regenerable` chose), reset with the
recorded seed, and driven through the recorded actions by
:class:`server.runtime.replay_check.Replay`, which compares every timestep with the log: the
observation's parts that exist in both with the same shape (the state vector; images, which
are what changes, are not compared), the reward, the discount and the end flags. Each
timestep is written to ``out_dir`` with the new observation and the log's own action,
reward, discount, step type and step metadata (frame, input, timing, info, control), and the
log's episode metadata; the log's ``env_config`` is the spec with the new settings.

Writes one JSON line ``{"progress": t}`` every :data:`PROGRESS_EVERY` steps, then the result:
``{"result": "regenerated", "steps"}``, ``{"result": "diverged", "difference"}`` or
``{"result": "not_replayable", "reason", "message"}``. The recorded log is only read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from server.runtime._replay_main import (
    Refused,
    _camera,
    close_written,
    not_replayable,
    open_episode,
    progress_main,
)

PROGRESS_EVERY = 25


def _image(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 3


def comparable(recorded: Any, replayed: Any) -> tuple[Any, Any]:
    """The parts of two observations a regeneration must reproduce: leaves in both, of the
    same shape, that are not images (a dict keeps its common keys; None: nothing)."""
    if isinstance(recorded, Mapping) and isinstance(replayed, Mapping):
        pairs = {k: comparable(recorded[k], replayed[k]) for k in recorded if k in replayed}
        kept = {k: pair for k, pair in pairs.items() if pair[0] is not None}
        return {k: a for k, (a, _) in kept.items()}, {k: b for k, (_, b) in kept.items()}
    a, b = np.asarray(recorded), np.asarray(replayed)
    if _image(a) or _image(b) or a.shape != b.shape:
        return None, None
    return recorded, replayed


class _Recording:
    """The environment seen by :class:`~server.runtime.replay_check.Replay`: each timestep it
    produces is written to the new log (with the log's step ``t``'s action, reward, discount,
    step type and metadata) and handed on cut to its :func:`comparable` parts."""

    def __init__(self, adapter: Any, writer: Any, steps: list[Any]) -> None:
        self.adapter, self.writer, self.steps = adapter, writer, steps
        self.t = 0

    def __getattr__(self, name: str) -> Any:  # set_seed, frame, camera, cameras...
        return getattr(self.adapter, name)

    def set_camera(self, camera: str) -> None:
        self.adapter.set_camera(camera)

    def _write(self, timestep: Any) -> Any:
        logged = self.steps[self.t]
        new = logged.timestep._replace(observation=timestep.observation)
        self.writer.record(new, logged.action, dict(logged.custom_data or {}), first=self.t == 0)
        kept, _ = comparable(timestep.observation, logged.timestep.observation)
        self.t += 1
        return timestep._replace(observation=kept)

    def reset(self) -> Any:
        return self._write(self.adapter.reset())

    def step(self, action: Any) -> Any:
        return self._write(self.adapter.step(action))


def regenerate(
    log_dir: Path,
    out_dir: Path,
    allowed: Any,
    settings: dict[str, Any],
    on_step: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write the episode of ``log_dir`` again into ``out_dir`` with ``settings`` (see the
    module doc); the result."""
    from server.recording.format import END_MAX_DURATION
    from server.recording.log_reader import SPECS_KEY
    from server.recording.writer import EpisodeWriter, open_reader
    from server.runtime import replay_check as rc

    try:
        meta, steps, spec, adapter = open_episode(log_dir, allowed, settings=settings)
    except Refused as refused:
        return refused.verdict
    try:
        with open_reader(log_dir) as reader:
            ends = list(reader.episode_metadata())
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors / ValueErrors
        adapter.close()
        return not_replayable("unreadable_log", f"the episode's log cannot be read: {exc}")
    # the reason the episode ended, as its worker wrote it when it closed the log
    end_reason = str(ends[-1].get("end_reason", "")) if ends else None
    seed = meta["seed"]
    header = {k: v for k, v in meta.items() if k != SPECS_KEY}
    header["env_config"] = spec.model_dump_json()
    writer = None
    try:
        adapter.max_steps = spec.max_steps
        if spec.camera:
            adapter.set_camera(spec.camera)
        writer = EpisodeWriter(adapter, out_dir, header, journal=False)
        recording = _Recording(adapter, writer, steps)
        try:
            found = rc.Replay(recording).run(
                int(seed),
                [s.timestep._replace(observation=comparable(s.timestep.observation,
                                                            s.timestep.observation)[0])
                 for s in steps],
                [s.action for s in steps],
                cameras=[_camera(s) for s in steps],
                time_limited=end_reason == END_MAX_DURATION,
                on_step=on_step,
            )  # fmt: skip
        except Exception as exc:
            return not_replayable(
                "env_raised",
                f"the environment raised at step {recording.t} of the regeneration: "
                f"{type(exc).__name__}: {exc}",
            )
        if found is not None:
            return {"result": "diverged", "difference": found.public()}
        writer.finalize(ends[-1] if ends else None)
        return {"result": "regenerated", "steps": len(steps) - 1}
    finally:
        close_written(writer, adapter)


def _regenerate(
    allowed: Any, log_dir: str, out_dir: str, settings: Any, seen: Any
) -> dict[str, Any]:
    return regenerate(Path(log_dir), Path(out_dir), allowed, settings, seen)


def main() -> None:
    progress_main(_regenerate, "the regeneration", PROGRESS_EVERY)


if __name__ == "__main__":
    main()
