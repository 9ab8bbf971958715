"""The completion process: a log recorded on the play path, its deferred observation images
drawn from each step's recorded simulator state, written as a new envlogger log.

``python -m server.runtime._complete_main`` in the environment's runtime interpreter (started
by :func:`server.runtime.completion.complete_log`, as the verification process is). Reads a
pickled ``(allowed, log_dir, out_dir, keys, memory_mb)`` on stdin; ``keys`` are the deferred
observation keys the log's note names (:mod:`server.recording.deferred`). The environment is
built from the spec the log was recorded with (nothing replaced) and reset with the recorded
seed, and for every step its ``restore_observation(sim_state)``
(``server/envs/robosuite_tasks.py``) sets the recorded state and observes it, images drawn:
every other value it gives must equal the recorded one
(:func:`server.runtime.replay_check.compare_values`: the state reproduces what the step
observed), and the deferred keys take the drawn images. Each step is written to
``out_dir`` with that observation and the log's own action, reward, discount, step type and
step metadata, and the log's own metadata: the log the step would have written had it drawn
its images itself. Nothing is re-simulated (the states are the recorded ones), and the
recorded log is only read.

Writes one JSON line ``{"progress": t}`` every :data:`PROGRESS_EVERY` steps, then the result:
``{"result": "completed", "steps"}``, ``{"result": "diverged", "difference"}`` (a recorded
state that does not give its step's values) or ``{"result": "not_replayable", "reason",
"message"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from server.recording.deferred import SOURCE
from server.runtime._replay_main import (
    Refused,
    close_written,
    not_replayable,
    open_episode,
    progress_main,
)

PROGRESS_EVERY = 50


def complete(
    log_dir: Path,
    out_dir: Path,
    allowed: Any,
    keys: Sequence[str],
    on_step: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write the episode of ``log_dir`` into ``out_dir`` with its ``keys`` drawn (see the
    module doc); the result."""
    from server.recording.log_reader import SPECS_KEY
    from server.recording.writer import EpisodeWriter, open_reader
    from server.runtime import replay_check as rc
    from server.runtime.space_specs import to_spec_value

    try:
        meta, steps, _spec, adapter = open_episode(log_dir, allowed)
    except Refused as refused:
        return refused.verdict
    writer = None
    try:
        restore = getattr(adapter.env.unwrapped, "restore_observation", None)
        if not callable(restore):
            return not_replayable(
                "cannot_complete", "the environment cannot draw an observation from its state"
            )
        with open_reader(log_dir) as reader:
            ends = list(reader.episode_metadata())
        spec = adapter.observation_spec()
        adapter.set_seed(int(meta["seed"]))
        adapter.reset()  # the renderer's settings, as a worker's episode has them
        header = {k: v for k, v in meta.items() if k != SPECS_KEY}
        writer = EpisodeWriter(adapter, out_dir, header, journal=False)
        for t, logged in enumerate(steps):
            recorded = logged.timestep.observation
            if not isinstance(recorded, dict) or SOURCE not in recorded:
                return not_replayable("no_state", f"step {t} of the log holds no {SOURCE}")
            drawn = restore(recorded[SOURCE], first=t == 0)
            drawn = {k: to_spec_value(v, spec[k]) for k, v in drawn.items()}
            # every value the state gives, but the ones drawn, is the recorded one
            checked = [k for k in drawn if k not in keys and k in recorded]
            found = rc.compare_values(
                "observation", {k: recorded[k] for k in checked}, {k: drawn[k] for k in checked}, t
            )
            if found is not None:
                return {"result": "diverged", "difference": found.public()}
            observation = {k: (drawn[k] if k in keys else v) for k, v in recorded.items()}
            timestep = logged.timestep._replace(observation=observation)
            writer.record(timestep, logged.action, dict(logged.custom_data or {}), first=t == 0)
            if on_step is not None:
                on_step(t)
        writer.finalize(ends[-1] if ends else None)
        return {"result": "completed", "steps": len(steps) - 1}
    except Exception as exc:
        return not_replayable(
            "env_raised", f"drawing the observation raised: {type(exc).__name__}: {exc}"
        )
    finally:
        close_written(writer, adapter)


def _complete(allowed: Any, log_dir: str, out_dir: str, keys: Any, seen: Any) -> dict[str, Any]:
    return complete(Path(log_dir), Path(out_dir), allowed, list(keys), seen)


def main() -> None:
    progress_main(_complete, "drawing the images", PROGRESS_EVERY)


if __name__ == "__main__":
    main()
