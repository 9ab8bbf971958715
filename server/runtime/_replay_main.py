"""The verification process: one recorded episode replayed in its environment's runtime.

``python -m server.runtime._replay_main`` (in the runtime's interpreter, started by
:func:`server.runtime.replay_process.verify_log`). Reads a pickled ``(allowed, log_dir,
end_reason, memory_mb, expected_steps, cpu_share)`` on stdin and writes one line of JSON on
stdout: the verdict (:mod:`server.runtime.replay_check`), with ``reason`` and ``message``
when the episode is not replayable, ``difference`` when it diverged, the ``steps`` compared
and the environment's ``versions``. Before it imports anything heavy it lowers its own
priority to the lowest nice level (it yields the CPU to every player) and caps its address
space at ``memory_mb``; it keeps its CPU within ``cpu_share`` of a core (:class:`Throttle`).
The log is only read.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

NICE = 19


def _yield_cpu() -> None:
    """The lowest nice level (19), before anything heavy is imported: players' workers (nice
    5) get about 20 times its share of a busy core. (Linux's idle class would starve it
    outright on a saturated machine, and verdicts would never come.)"""
    with contextlib.suppress(OSError):
        os.nice(NICE - os.nice(0))


class Throttle:
    """Keeps this process's CPU time (all its threads: Mesa draws on several) within
    ``share`` of one core's: :meth:`pace`, called between steps, sleeps once it is ahead.
    Beside nice 19 this leaves the cores idle part of the time, so that a player's worker
    waking up finds one free instead of waiting for the check's time slice to end
    (benchmarks/replay_check.py measures both). None or >= the cores: no limit."""

    def __init__(self, share: float | None) -> None:
        self.share = share if share and share < (os.cpu_count() or 1) else None
        self.wall0, self.cpu0 = time.monotonic(), time.process_time()

    def pace(self) -> None:
        if self.share is None:
            return
        cpu = time.process_time() - self.cpu0
        ahead = cpu / self.share - (time.monotonic() - self.wall0)
        if ahead > 0.002:
            time.sleep(ahead)


def _limit(memory_mb: int | None) -> None:
    if memory_mb:
        limit = int(memory_mb) * 1024 * 1024
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def not_replayable(reason: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"verdict": "not_replayable", "reason": reason, "message": message, **extra}


class Refused(Exception):
    """The episode cannot be replayed: :attr:`verdict` says why (:func:`not_replayable`)."""

    def __init__(self, verdict: dict[str, Any]) -> None:
        super().__init__(verdict["message"])
        self.verdict = verdict


def open_episode(
    log_dir: Path, allowed: Any, *, expected_steps: int | None = None,
    settings: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Any], Any, Any]:  # fmt: skip
    """A log's metadata, steps, environment spec (its settings replaced by ``settings``) and
    the environment built from it, ready to replay; :class:`Refused` when the log is
    unreadable, cut (fewer timesteps than ``expected_steps``), not one episode, without a
    seed or a valid spec, or its environment cannot be built here."""
    import dm_env

    from server.recording.log_reader import read_log
    from server.runtime.adapters import build_adapter
    from server.study_spec import EnvironmentSpec

    def refuse(reason: str, message: str) -> Refused:
        return Refused(not_replayable(reason, message))

    try:
        meta, steps = read_log(str(log_dir))
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors / ValueErrors
        raise refuse("unreadable_log", f"the episode's log cannot be read: {exc}") from exc
    if not steps:
        raise refuse("unreadable_log", "the episode's log holds no step")
    if expected_steps is not None and len(steps) < expected_steps:
        raise refuse("truncated_log", f"the log holds {len(steps)} of the episode's "
                     f"{expected_steps} timesteps: it was cut")  # fmt: skip
    if sum(1 for s in steps if s.timestep.step_type == dm_env.StepType.FIRST) != 1:
        raise refuse("unreadable_log", "the log does not hold exactly one episode")
    seed = meta.get("seed")
    if seed is None or int(seed) < 0:
        raise refuse("no_seed", "no seed was recorded with the episode")
    try:
        spec = EnvironmentSpec.model_validate_json(str(meta.get("env_config", "")))
    except ValueError as exc:
        raise refuse("unreadable_log", f"the log's environment spec is not valid: {exc}") from exc
    if settings:
        source = spec.source.model_copy(update={"kwargs": {**spec.source.kwargs, **settings}})
        spec = spec.model_copy(update={"source": source})
    try:
        adapter = build_adapter(spec.source, allowed)
    except Exception as exc:
        raise refuse("env_build_failed", f"the environment cannot be built here: {exc}") from exc
    return meta, steps, spec, adapter


def verify(
    log_dir: Path,
    allowed: Any,
    end_reason: str | None,
    expected_steps: int | None = None,
    cpu_share: float | None = None,
) -> dict[str, Any]:
    """The verdict on the episode whose log is ``log_dir``."""
    from server.recording.format import END_MAX_DURATION
    from server.runtime import replay_check as rc

    try:
        meta, steps, spec, adapter = open_episode(log_dir, allowed, expected_steps=expected_steps)
    except Refused as refused:
        return refused.verdict
    seed = meta["seed"]
    try:
        versions = rc.package_versions(adapter)
        if rc.declared_nondeterministic(adapter):
            return not_replayable(
                "declared_nondeterministic",
                "the environment declares that it is not deterministic",
                versions=versions,
            )
        adapter.max_steps = spec.max_steps
        if spec.camera:
            adapter.set_camera(spec.camera)
        cameras = [_camera(s) for s in steps]
        reached = [0]
        share = Throttle(cpu_share)

        def seen(t: int) -> None:
            reached[0] = t
            share.pace()

        every = spec.verify_images == "every_step"
        try:
            found = rc.Replay(adapter).run(
                int(seed),
                [s.timestep for s in steps],
                [s.action for s in steps],
                cameras=cameras,
                time_limited=end_reason == END_MAX_DURATION,
                on_step=seen,
                images_at=None if every else rc.sampled(rc.IMAGES_EVERY),
            )
        except Exception as exc:
            step = reached[0] + 1
            return not_replayable(
                "env_raised",
                f"the environment raised at step {step} of the replay: {type(exc).__name__}: {exc}",
                step=step,
                versions=versions,
            )
        if found is not None:
            return {
                "verdict": "diverged",
                "difference": found.public(),
                "steps": found.step,
                "versions": versions,
            }
        return {"verdict": "verified", "steps": len(steps) - 1, "versions": versions}
    finally:
        with contextlib.suppress(Exception):
            adapter.close()


def _camera(step: Any) -> str | None:
    timing = (step.custom_data or {}).get("timing")
    try:
        camera = json.loads(timing).get("camera") if timing else None
    except (ValueError, AttributeError):
        return None
    return camera if isinstance(camera, str) else None


def close_written(writer: Any, adapter: Any) -> None:
    """Close a child's log writer (when it made one) and its environment (quietly: it is
    thrown away)."""
    if writer is not None:
        writer.finalize()
    with contextlib.suppress(Exception):
        adapter.close()


def progress_main(work: Callable[..., dict[str, Any]], what: str, every: int) -> None:
    """A child process writing a log (regeneration, completion): its payload's items but the
    last two (``memory_mb``, ``cpu_share``: :class:`Throttle`) go to ``work(*items, seen)``,
    which calls ``seen(t)`` per step;
    one JSON line ``{"progress": t}`` every ``every`` steps, then the result's line
    (``result``, ``seconds``). ``what`` names the work in an out-of-memory message."""
    _yield_cpu()
    *items, memory_mb, cpu_share = pickle.load(sys.stdin.buffer)
    _limit(memory_mb)
    started = time.monotonic()
    share = Throttle(cpu_share)

    def seen(t: int) -> None:
        share.pace()
        if t and t % every == 0:
            sys.stdout.write(json.dumps({"progress": t}) + "\n")
            sys.stdout.flush()

    try:
        result = work(*items, seen)
    except MemoryError:
        result = not_replayable("out_of_memory", f"{what} needed more than {memory_mb} MB")
    result.setdefault("result", result.pop("verdict", "not_replayable"))
    result["seconds"] = round(time.monotonic() - started, 3)
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def main() -> None:
    _yield_cpu()  # the payload's unpickling imports the app's allow-list: niced already
    allowed, log_dir, end_reason, memory_mb, expected_steps, cpu_share = pickle.load(
        sys.stdin.buffer
    )
    _limit(memory_mb)
    started = time.monotonic()
    try:
        result = verify(Path(log_dir), allowed, end_reason, expected_steps, cpu_share)
    except MemoryError:
        result = not_replayable("out_of_memory", f"the replay needed more than {memory_mb} MB")
    result["seconds"] = round(time.monotonic() - started, 3)
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
