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


# What a benchmark's smoke report must say beyond being JSON, where a test asks more.
REPORT_CHECKS = {"video_memory.py": _video_memory}


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
