"""benchmarks/video_memory.py --smoke runs end to end (a real server, four requests at once)
and prints its JSON: one video made, every answer 200, the server's growth measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_video_memory_benchmark_smoke_run() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "video_memory.py"), "--smoke"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    (server,) = report["results"]
    assert report["steps"] == 500 and server["mode"] == "server"
    assert server["answers"] == [200] * 4 and server["videos_made"] == 1
    assert server["growth_mib"] > 0 and report["ok"] is True
