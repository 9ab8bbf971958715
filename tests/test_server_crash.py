"""A step the server accepted is never lost, even when the server itself is killed (-9)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from server.models import Episode, EpisodeStatus
from server.player.protocol import unpack_frame
from server.recording.writer import open_reader
from server.services import bootstrap
from tests.player.conftest import counter_env, spec

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "admin-password-123"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(
    settings, port: int, *, new_group: bool = False, **extra: str
) -> subprocess.Popen[bytes]:
    """``rlds-studio serve`` on ``port`` with the test's database and data root (``extra``:
    more STUDIO_ settings), once it answers; ``new_group``: in a process group of its own
    (with its workers), as in a container."""
    env = {
        **os.environ,
        "STUDIO_DATABASE_URL": settings.database_url,
        "STUDIO_DATA_ROOT": str(settings.data_root),
        "STUDIO_ADMIN_PASSWORD": PASSWORD,
        "STUDIO_LOAD_SAMPLE_STUDIES": "false",
        "STUDIO_CATALOG_THUMBNAILS_AT_START": "false",
        "STUDIO_REPLAY_CHECK_WORKERS": "0",  # as in the in-process tests (two cores)
        "STUDIO_DM_ENV_FACTORIES": ",".join(settings.dm_env_factories),  # the fake envs
        **{f"STUDIO_{name.upper()}": value for name, value in extra.items()},
    }
    # stderr is kept: the orphaned worker must finish quietly (no traceback) after a kill
    with open(_stderr_path(settings), "ab") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=new_group,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("the server did not start")


def _stderr_path(settings) -> Path:  # type: ignore[no-untyped-def]
    return Path(settings.data_root).parent / "server.stderr"


def _log_steps(path: str, want: int, seconds: float = 30.0) -> int:
    """Recorded steps in the log once the orphaned worker has flushed it."""
    deadline = time.monotonic() + seconds
    count = -1
    while time.monotonic() < deadline:
        try:
            with open_reader(path) as reader:
                count = len(list(reader.steps))
        except Exception:
            count = -1
        if count >= want:
            return count
        time.sleep(0.2)
    return count


def _wait_closed(path: Path, seconds: float = 30.0) -> None:
    """Until no process holds ``path`` open (the orphaned worker inherited the server's
    stderr: once it has exited, all it will ever write is there)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_holds(pid, path) for pid in os.listdir("/proc") if pid.isdigit()):
            return
        time.sleep(0.05)
    raise AssertionError(f"a process still holds {path} open after {seconds} s")


def _holds(pid: str, path: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path.resolve()) for fd in fds)
    except OSError:  # gone meanwhile, or not ours to read
        return False


# async: the worker sends on its own clock, so the dead app leaves unread data and the
# worker's next read is a ConnectionResetError (a traceback before issue 22)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_killed_server_keeps_every_accepted_step(settings, db, mode):
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve(settings, port)
    try:
        http = httpx.Client(base_url=base)
        login = http.post("/api/auth/login", json={"email": settings.admin_email,
                                                   "password": PASSWORD})  # fmt: skip
        assert login.status_code == 200, login.text
        http.headers["X-CSRF-Token"] = login.json()["csrf_token"]
        env = counter_env(episode_len=1000)
        if mode == "async":
            env = counter_env(episode_len=100_000, mode="async", fps=60)
        study = http.post("/api/studies", json={"spec": spec(env)})
        assert study.status_code == 201, study.text
        cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
        url = f"ws://127.0.0.1:{port}/ws/play?study={study.json()['id']}"
        with connect(url, origin=base, additional_headers={"Cookie": cookie}) as ws:

            def until(kind: str) -> dict:
                while True:
                    message = ws.recv(timeout=30)
                    if isinstance(message, str) and json.loads(message)["type"] == kind:
                        return json.loads(message)

            until("hello")
            ws.send(json.dumps({"type": "start", "env_id": "counter"}))
            episode_id = until("episode_started")["episode"]["id"]
            ws.send(json.dumps({"type": "go"}))  # past the ready gate
            until("started")
            accepted = 0  # the highest step whose frame came back: the server applied it
            for i in range(25):
                ws.send(json.dumps({"type": "input", "keys": ["KeyA"], "client_ms": 1000.0 + i}))
                message = ws.recv(timeout=30)
                while not isinstance(message, bytes):
                    message = ws.recv(timeout=30)
                accepted = max(accepted, unpack_frame(message)[1])
            assert accepted >= 20
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    row = db.get(Episode, episode_id)
    assert row is not None and row.status == EpisodeStatus.recording  # nobody closed it
    # The orphaned worker sees its pipe close, finalizes the log and exits. Steps applied
    # after the last frame the client saw may be there too.
    recorded = _log_steps(row.storage_path, accepted + 1)
    assert recorded >= accepted + 1
    _wait_closed(_stderr_path(settings))  # the worker exits once its log is closed
    stderr = _stderr_path(settings).read_text(errors="replace")
    assert "Traceback" not in stderr, stderr[-3000:]  # e.g. ConnectionResetError (issue 22)

    # The next start marks it abandoned, with totals counted from the log.
    bootstrap.bootstrap(settings, db)
    db.refresh(row)
    assert row.status == EpisodeStatus.abandoned and row.end_reason == "server_restart"
    assert row.steps == recorded
    if mode == "sync":  # one input per step
        assert row.total_reward == float(recorded - 1)
        # and with quality signals from the log: KeyA held on every action
        assert row.quality_at is not None and row.idle_share == 0.0
