"""Where a Pong step's time goes in a worker process at 60 fps.

``--sessions`` real play sessions (:class:`server.runtime.hosted_env.HostedEnv`, the objects a
worker process holds; async Pong at 60 fps as in ``benchmarks/concurrency.py``) record
episodes in this process, without the app, ticked on one grid at their pace and sleeping
between ticks as a worker's loop does. Prints the process's CPU per step (the flush thread
included) and the wall time per step of each part: the environment's step, the JPEG, the
step serialized (``codec.serialize``), the step journal's write, the log's write
(envlogger's ``add_step``: its C++ message, Riegeli, zstd), and the rest (input mapping,
metadata, the event, the log's flushes). ``--sessions 1`` against the default 8 shows what a
process's wake-up costs when nobody shares it. ``--smoke`` runs half a second: it checks
that the benchmark still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/step_breakdown.py [--sessions 8] [--seconds 5] [--repeat 3]
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.concurrency import PONG  # noqa: E402
from benchmarks.worker_cpu import session_args  # noqa: E402
from server.recording import codec  # noqa: E402
from server.recording import writer as writer_module  # noqa: E402
from server.recording.journal import Journal  # noqa: E402
from server.runtime import hosted_env  # noqa: E402
from server.runtime.adapters import GymnasiumAdapter, build_adapter  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.study_spec import EnvironmentSpec  # noqa: E402

ALLOWED = AllowedEnvironments.of(["gymnasium", "ale_py"])
INPUTS = ({"keys": ["ArrowUp"]}, {"keys": ["ArrowDown"]})
# the parts timed, where they are looked up when a step runs: (owner, attribute, label)
PARTS = (
    (GymnasiumAdapter, "_step", "env_step"),
    (hosted_env, "encode_jpeg", "jpeg"),
    (codec, "serialize", "serialize"),
    (Journal, "append", "journal_write"),
    (writer_module._Backend, "write_encoded", "log_write"),  # noqa: SLF001
)


class _Sink:
    """Where a session's events go (the process's socket in a worker): pickled, dropped."""

    def send(self, message: tuple[Any, ...]) -> None:
        pickle.dumps(message, pickle.HIGHEST_PROTOCOL)


@contextlib.contextmanager
def timed_parts(totals: Counter[str]) -> Iterator[None]:
    """Add each part's wall time to ``totals`` while inside."""

    def wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[label] += time.perf_counter() - start

        return timed

    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in PARTS]
    try:
        for (owner, name, label), (_, _, fn) in zip(PARTS, saved, strict=True):
            setattr(owner, name, wrap(fn, label))
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def play(sessions: list[hosted_env.HostedEnv], seconds: float) -> dict[str, Any]:
    """Tick ``sessions`` for ``seconds`` as a worker's loop does; figures per step."""
    totals: Counter[str] = Counter()
    steps = 0
    cpu0, end = time.process_time(), time.monotonic() + seconds
    with timed_parts(totals):
        while time.monotonic() < end:
            start = time.perf_counter()
            for session in sessions:
                due = session.tick_due()
                if due is not None and due <= 0:
                    if steps % 30 == 0:
                        session.handle("input", {"input": INPUTS[steps // 30 % 2]})
                    session.tick()
                    steps += 1
            for session in sessions:
                session.commit()
            for session in sessions:
                if session.writer is not None:
                    session.writer.flush_if_due()
            totals["step"] += time.perf_counter() - start
            waits = [w for s in sessions for w in (s.tick_due(), s.flush_due()) if w is not None]
            if waits and min(waits) > 0:
                time.sleep(min(waits))
    cpu = time.process_time() - cpu0
    per_step = {label: 1e6 * value / max(steps, 1) for label, value in totals.items()}
    timed = sum(per_step.get(label, 0.0) for _, _, label in PARTS)
    per_step["rest"] = per_step.pop("step", 0.0) - timed
    return {
        "steps": steps,
        "cpu_us_per_step": round(1e6 * cpu / max(steps, 1), 1),
        "wall_us_per_step": {label: round(value, 1) for label, value in per_step.items()},
    }


def main() -> None:
    args = session_args(__doc__, seconds=5.0)
    spec = EnvironmentSpec.model_validate({**PONG, "max_steps": 1_000_000})
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="step-breakdown-") as tmp:
        sessions = []
        for index in range(args.sessions):
            adapter = build_adapter(spec.source, ALLOWED)
            session = hosted_env.HostedEnv(
                _Sink(), spec, adapter, hosted_env.EpisodeLogs("bench", Path(tmp), 0.2), ALLOWED
            )
            session.begin_episode({"episode_id": f"episode-{index}", "seed": index})
            sessions.append(session)
        play(sessions, min(1.0, args.seconds))  # warm-up
        runs = [play(sessions, args.seconds) for _ in range(args.repeat)]
        for session in sessions:
            session.end_episode({"reason": "benchmark"})
            session.env.close()
    cpu = statistics.median(run["cpu_us_per_step"] for run in runs)
    print(json.dumps({
        "benchmark": "step_breakdown",
        "sessions": args.sessions,
        "fps": spec.fps,
        "cpu_us_per_step": cpu,
        "cpu_us_per_step_range": [min(r["cpu_us_per_step"] for r in runs),
                                  max(r["cpu_us_per_step"] for r in runs)],
        "wall_us_per_step": {
            label: round(statistics.median(r["wall_us_per_step"][label] for r in runs), 1)
            for label in runs[0]["wall_us_per_step"]
        },
        # what the workers alone would allow on this machine's cores at this pace
        "players_workers_alone_allow": round((os.cpu_count() or 1) / (cpu * 1e-6 * spec.fps), 1),
        "load_average": os.getloadavg()[0],
        "runs": runs,
        "smoke": args.smoke,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
