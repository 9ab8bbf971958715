"""Memory of an episode video: the server's growth while it makes the MP4 of a long episode.

Records a Pong-sized episode (210×160 RGB observations and frames, 20,000 steps; ``--smoke``:
500) with the real envlogger writer, starts the app (``rlds-studio serve``, SQLite) with the
episode in a study, and asks ``GET /api/episodes/{id}/video.mp4`` four times at once, as a
browser would. Prints one JSON object: the steps, the log's size, the server process's
resident memory before and at its peak (VmHWM) and their difference, the time and the number
of videos made (1: single flight). The video is made step by step from the log, so the
growth should not depend on the episode's length (the issue's bound: < 100 MiB for 20,000
steps). ``--compare`` also makes the video in a fresh process both ways: streamed, and the
in-memory path the exports use (``read_episode`` then encode), which holds every observation.

    python benchmarks/video_memory.py [--steps N] [--smoke] [--compare]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIB = 1024 * 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    # Linux: writing 5 to clear_refs resets VmHWM to the current RSS.
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def measure(log_dir: Path, out: Path, mode: str) -> dict[str, Any]:
    """In this (fresh) process: RSS before and at the peak of making the video."""
    from server.export.episode import read_episode
    from server.export.episode_video import episode_video, video_of_log

    _reset_peak()
    before = _status_kib("VmRSS")
    started = time.perf_counter()
    if mode == "streamed":
        video_of_log(log_dir, out)
    else:
        episode_video(read_episode(log_dir), out)
    seconds = time.perf_counter() - started
    peak = _status_kib("VmHWM")
    return {
        "mode": mode,
        "rss_before_mib": round(before / 1024, 1),
        "rss_peak_mib": round(peak / 1024, 1),
        "growth_mib": round((peak - before) / 1024, 1),
        "encode_s": round(seconds, 2),
        "video_mib": round(out.stat().st_size / MIB, 2),
    }


def _proc_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def serve_and_fetch(root: Path, log_dir: Path, asks: int = 4) -> dict[str, Any]:
    """Start the app on ``root`` with ``log_dir`` as an episode; ask for its video ``asks``
    times at once; the server's memory before and at its peak."""
    import os
    import socket
    import threading

    import httpx

    from server.core.config import Settings
    from server.core.db import make_engine, make_sessionmaker
    from server.models import Role
    from server.schemas.users import UserCreate
    from server.services import bootstrap, users
    from server.services.studies import studies
    from server.study_spec import StudySpec
    from tests.api.routes.recorded import Inserter
    from tests.export.recordings import Recording

    data, password = root / "data", "video-benchmark-password-1"
    env = {
        **os.environ, "STUDIO_DATA_ROOT": str(data), "STUDIO_LOAD_SAMPLE_STUDIES": "false",
        "STUDIO_SECRET_KEY": "video-benchmark-secret-key-0123456789", "STUDIO_ENVIRONMENT": "test",
        "STUDIO_ADMIN_EMAIL": "admin@example.com", "STUDIO_ADMIN_PASSWORD": password,
        "PYTHONPATH": str(ROOT),
    }  # fmt: skip
    settings = Settings(data_root=data, secret_key=env["STUDIO_SECRET_KEY"], _env_file=None)
    bootstrap.prepare(settings)
    engine = make_engine(settings.database_url)
    with make_sessionmaker(engine)() as db:
        body = UserCreate(email="designer@example.com", name="D", password=password,
                          role=Role.designer)  # fmt: skip
        owner = users.create_user(db, body)
        source = {"kind": "gymnasium", "id": "CartPole-v1"}  # the row's env: any allowed one
        spec = StudySpec.model_validate(
            {"name": "Video", "environments": [{"id": "pong", "name": "Pong", "source": source}]}
        )
        study = studies.create_study(db, owner.id, spec)
        rec = Recording(log_dir, log_dir.name, "pong", {}, 1)
        episode_id = Inserter(db, data).add(study, rec, env_key="pong").id
        db.commit()
    engine.dispose()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if client.get("/api/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the server did not start")
                time.sleep(0.2)
            login = client.post(
                "/api/auth/login", json={"email": "designer@example.com", "password": password}
            )
            login.raise_for_status()
            time.sleep(1.0)  # let start-up settle before the baseline
            Path(f"/proc/{server.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
            before = _proc_kib(server.pid, "VmRSS")
            answers: list[int] = []

            def ask() -> None:
                res = client.get(f"/api/episodes/{episode_id}/video.mp4")
                answers.append(res.status_code)

            started = time.perf_counter()
            threads = [threading.Thread(target=ask) for _ in range(asks)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - started
            peak = _proc_kib(server.pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(timeout=60)
    videos = list((data).rglob("*.mp4"))
    return {
        "mode": "server", "requests_at_once": asks, "answers": answers,
        "videos_made": len(videos),
        "rss_before_mib": round(before / 1024, 1), "rss_peak_mib": round(peak / 1024, 1),
        "growth_mib": round((peak - before) / 1024, 1), "encode_s": round(seconds, 2),
        "video_mib": round(sum(v.stat().st_size for v in videos) / MIB, 2),
    }  # fmt: skip


def record(folder: Path, steps: int) -> Path:
    """A ``steps``-step episode of a Pong-sized env, recorded with the real writer."""
    import gymnasium as gym
    import numpy as np

    from tests.export.recordings import record_episode

    class PongSized(gym.Env):
        """210×160 RGB frames: two paddles and a ball moving over a dark field."""

        metadata = {"render_modes": ["rgb_array"]}
        observation_space = gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)
        action_space = gym.spaces.Discrete(3)
        render_mode = "rgb_array"

        def __init__(self) -> None:
            self.t = 0
            self.frame = np.zeros((210, 160, 3), np.uint8)

        def _obs(self) -> np.ndarray:
            f = self.frame
            f[:] = (20, 60, 20)
            y = (self.t * 3) % 180
            f[y : y + 30, 8:12] = 220
            f[180 - y : 210 - y, 148:152] = 220
            bx, by = (self.t * 5) % 156, (self.t * 7) % 206
            f[by : by + 4, bx : bx + 4] = 255
            return f.copy()

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
            super().reset(seed=seed)
            self.t = 0
            return self._obs(), {}

        def step(self, action: int) -> tuple:
            self.t += 1
            return self._obs(), 0.0, False, self.t >= steps - 1, {}

        def render(self) -> np.ndarray:
            return self.frame

    episode_id = f"video{steps}".ljust(32, "0")
    spec = {"id": "pong", "name": "Pong", "source": {"kind": "gymnasium", "id": "PongSized"}}
    rec = record_episode(
        PongSized, folder / episode_id, env_id="pong", episode_id=episode_id, seed=1,
        env_config=spec,
    )  # fmt: skip
    return rec.log_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--smoke", action="store_true", help="500 steps: a few seconds")
    parser.add_argument("--compare", action="store_true", help="also the in-memory path")
    parser.add_argument(
        "--measure", nargs=3, metavar=("LOG", "OUT", "MODE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.measure:
        log, out, mode = args.measure
        print(json.dumps(measure(Path(log), Path(out), mode)))
        return
    steps = 500 if args.smoke else args.steps
    with tempfile.TemporaryDirectory(prefix="video-memory-") as tmp:
        started = time.perf_counter()
        log_dir = record(Path(tmp), steps)
        recorded_s = time.perf_counter() - started
        log_bytes = sum(p.stat().st_size for p in log_dir.rglob("*") if p.is_file())
        results = [serve_and_fetch(Path(tmp) / "server", log_dir)]
        for mode in ["streamed", "in_memory"] if args.compare else []:
            out = Path(tmp) / f"{mode}.mp4"
            done = subprocess.run(
                [sys.executable, __file__, "--measure", str(log_dir), str(out), mode],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["steps_per_s"] = round(steps / max(result["encode_s"], 1e-9))
            results.append(result)
    print(json.dumps({
        "benchmark": "video_memory", "steps": steps, "frame": "210x160 RGB",
        "log_mib": round(log_bytes / MIB, 1), "record_s": round(recorded_s, 1),
        "growth_limit_mib": 100, "results": results,
        "ok": all(r["growth_mib"] < 100 for r in results if r["mode"] != "in_memory"),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
