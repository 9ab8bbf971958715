"""Every benchmark still runs: ``benchmarks/X.py --smoke`` for each script in benchmarks/.

A smoke run takes a few seconds and checks that the benchmark runs end to end and prints
its JSON (its figures mean nothing; ``REPORT_CHECKS`` asks more of a few reports); the full
runs are ``make bench``. A new benchmark is picked up by the glob, so it must take
``--smoke`` too. Runs in the SQLite pass only (no database fixture): the benchmarks that
need PostgreSQL use the local server, as CI has it, and are skipped when none answers
(failed with ``STUDIO_REQUIRE_POSTGRES``, as in CI).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.harness import postgres_answers

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))
NEEDS_POSTGRES = {"replicas.py", "review_list.py"}  # on 127.0.0.1:5432
TIMEOUT_S = 180


def last_json_object(stdout: str) -> Any:
    """The whole output as JSON, else the last JSON object that starts a line."""
    try:
        return json.loads(stdout)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    starts = [i for i, c in enumerate(stdout) if c == "{" and (i == 0 or stdout[i - 1] == "\n")]
    for start in reversed(starts):
        try:
            return decoder.raw_decode(stdout, start)[0]
        except ValueError:
            continue
    raise AssertionError(f"no JSON object in the output:\n{stdout[-2000:]}")


def _video_memory(report: dict[str, Any]) -> None:
    """A real server, four requests at once: one video made, every answer 200, the server's
    growth measured."""
    (server,) = report["results"]
    assert report["steps"] == 500 and server["mode"] == "server"
    assert server["answers"] == [200] * 4 and server["videos_made"] == 1
    assert server["growth_mib"] > 0 and report["ok"] is True


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _robot(report: dict[str, Any]) -> None:
    """robosuite's two tasks measured (in their runtime's interpreter and through a worker)
    at their 20 steps/s, and a worker start timed in every runtime."""
    for name in ("pick_cube", "robosuite_pick_place_can", "robosuite_lift"):
        case = report[name]
        for field in ("step_ms", "step_render_ms", "worker_round_trip_ms", "in_worker_ms"):
            assert _positive(case[field]["median"]) and _positive(case[field]["p90"]), case
        assert _positive(case["teleoperators"]["cores_each"]), case
        # the live step's CPU against physics plus one shown render, in the same run
        live = case["live_step"]
        assert _positive(live["live_step_cpu_ms"]) or live["live_step_cpu_ms"] == 0, live
        assert _positive(live["physics_and_shown_cpu_ms"]), live
        # teleoperators playing at once at the control rate, their late frames measured
        (run,) = case["teleoperators"]["runs"]
        assert run["players"] == 1 and run["late_frames_pct"] >= 0 and _positive(run["steps"])
    assert report["robosuite_pick_place_can"]["deferred_keys"] == [
        "agentview_image", "robot0_eye_in_hand_image"
    ]  # fmt: skip
    assert report["robosuite_lift"]["runtime"] == "robosuite"
    assert report["robosuite_lift"]["control_hz"] == 20 and report["pick_cube"]["control_hz"] == 25
    starts = report["worker_start_s"]
    assert set(starts) == {"app", "robotics", "robosuite", "dm_control", "nethack"}, starts
    assert report["pick_cube"]["runtime"] == "robotics"
    for runtime, found in starts.items():
        assert found["entry"] and _positive(found["median"]), (runtime, found)
    gates = report["ready_gate_s"]
    assert set(gates) == set(starts), gates
    for found in gates.values():
        assert _positive(found["cold_median"]) and _positive(found["warm_median"]), found


def _replay_check(report: dict[str, Any]) -> None:
    """Episodes recorded by real workers and verified as the app does, the cost of a check
    split from its replay, and players' lateness without and with verification beside."""
    environments = report["environments"]
    assert set(environments) == {"cartpole", "pick_cube"}, environments
    for name, case in environments.items():
        assert case["steps"] == 12 and case["end_reason"] == "max_steps", (name, case)
        for field in ("overall_steps_per_s", "times_real_time_overall", "fps"):
            assert _positive(case[field]) and math.isfinite(case[field]), (name, field, case)
        for check in (case["long"], case["one_step"]):
            assert all(_positive(check[k]) for k in ("wall_s", "in_process_s", "start_s")), case
        # the marginal rate: None when a few steps are lost in the noise of the start
        assert case["replay_steps_per_s"] is None or _positive(case["replay_steps_per_s"])
    assert _positive(report["one_step_check_s_median"])
    players = report["players"]
    assert players["players"] == 1 and _positive(players["one_player_cpu_cores"])
    for window in (players["without_verification"], players["with_verification"]):
        assert _positive(window["steps"]) and _positive(window["steps_per_s_per_player"])
        for field in ("late_frames_pct", "missed_ticks", "tick_lateness_p99_ms", "gap_p99_ms"):
            assert window[field] >= 0 and math.isfinite(window[field]), (field, window)
    assert _positive(players["with_verification"]["verifying_pct_of_window"]), players
    assert set(players["ratios"]) >= {"late_frames_pct", "tick_lateness_p99_ms"}


# What a benchmark's smoke report must say beyond being JSON, where a test asks more.
REPORT_CHECKS = {
    "video_memory.py": _video_memory,
    "robot.py": _robot,
    "replay_check.py": _replay_check,
}


def test_every_benchmark_is_found() -> None:
    assert len(BENCHMARKS) >= 9, BENCHMARKS


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_smoke(script: Path) -> None:
    if script.name in NEEDS_POSTGRES and not os.environ.get("STUDIO_REQUIRE_POSTGRES"):
        if not postgres_answers():
            pytest.skip(f"{script.name} needs PostgreSQL at 127.0.0.1:5432")
    # its own process group: on a timeout, its servers and workers go with it
    proc = subprocess.Popen(
        [sys.executable, str(script), "--smoke"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{script.name} --smoke ran over {TIMEOUT_S} s:\n{stderr[-4000:]}")
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{stderr[-4000:]}"
    report = last_json_object(stdout)
    assert isinstance(report, dict) and report, stdout[-2000:]
    if script.name in REPORT_CHECKS:
        REPORT_CHECKS[script.name](report)
