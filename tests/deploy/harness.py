"""The deployment of docker/compose.yaml, natively: a fresh PostgreSQL database, app replicas
started by docker/start.sh on their own ports with one shared data root, and HAProxy with
docker/haproxy.cfg in front (used by tests/deploy/ and benchmarks/replicas.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from server.core.db import make_engine

ROOT = Path(__file__).resolve().parents[2]
START_SCRIPT = ROOT / "docker" / "start.sh"
HAPROXY_CONFIG = ROOT / "docker" / "haproxy.cfg"
PG_ADMIN_URL = os.environ.get(
    "STUDIO_DEPLOY_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
COOKIE = "studio_replica"  # HAProxy's stickiness cookie (docker/haproxy.cfg)
SERVERS = ("app1", "app2")  # the config's servers, in order


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_answers(url: str = PG_ADMIN_URL) -> bool:
    """Whether the PostgreSQL server of ``url`` takes connections."""
    from server.core.db_probe import main as probe

    return probe(url) == 0


@dataclass
class Replica:
    """One app replica: its server name in the HAProxy config, port and process."""

    name: str
    replica_id: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """kill -9 (the process of start.sh is the app: it ``exec``s)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@dataclass
class Deployment:
    """A running deployment; ``url``/``port``: the load balancer."""

    database_url: str
    data_root: Path
    port: int
    replicas: list[Replica] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def replica(self, server: str) -> Replica:
        """The replica behind HAProxy's server (cookie value) ``server``."""
        return next(r for r in self.replicas if r.name == server)


def _wait_healthy(url: str, proc: subprocess.Popen[bytes] | None, log: Path | None) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log else ""
            raise RuntimeError(f"{url} exited ({proc.returncode}):\n{tail}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy")


@contextlib.contextmanager
def fresh_database(admin_url: str = PG_ADMIN_URL, prefix: str = "deploy_") -> Iterator[str]:
    """A new PostgreSQL database (``prefix`` and a random suffix) on the server of
    ``admin_url``, dropped afterwards."""
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextlib.contextmanager
def deployment(
    workdir: Path, replicas: int = 2, env: dict[str, str] | None = None
) -> Iterator[Deployment]:
    """PostgreSQL database, ``replicas`` app replicas (1 or 2) and HAProxy, all stopped after.

    ``env``: more STUDIO_* settings for every replica. With one replica, the config's second
    server points at a closed port: HAProxy's health check keeps it out of rotation.
    """
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        raise RuntimeError("HAProxy is not installed: run `make haproxy` (apt-get install haproxy)")
    workdir.mkdir(parents=True, exist_ok=True)
    with fresh_database() as database_url:
        dep = Deployment(database_url, workdir / "data", free_port())
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for i in range(replicas):
                name = SERVERS[i]
                port, log = free_port(), workdir / f"{name}.log"
                replica_env = {
                    **os.environ,
                    "PYTHON": sys.executable,
                    "PYTHONPATH": str(ROOT),
                    "STUDIO_DATABASE_URL": database_url,
                    "STUDIO_DATA_ROOT": str(dep.data_root),
                    "STUDIO_SECRET_KEY": "deployment-secret-key-0123456789",
                    "STUDIO_ADMIN_PASSWORD": "admin-password-123",
                    "STUDIO_LOAD_SAMPLE_STUDIES": "false",
                    "STUDIO_HOST": "127.0.0.1",
                    "STUDIO_PORT": str(port),
                    # its HAProxy server name, as in compose.yaml: a phone's socket is
                    # routed on it (/ws/phone?replica=app1)
                    "STUDIO_REPLICA_ID": name,
                    "STUDIO_TRUSTED_PROXIES": "127.0.0.1",
                    **(env or {}),
                }
                with open(log, "wb") as out:
                    proc = subprocess.Popen(
                        [str(START_SCRIPT)], env=replica_env, cwd=ROOT,
                        stdout=out, stderr=subprocess.STDOUT,
                    )  # fmt: skip
                procs.append(proc)
                dep.replicas.append(Replica(name, name, port, proc, log))
            for r in dep.replicas:
                _wait_healthy(r.url, r.proc, r.log)
            ports = [r.port for r in dep.replicas] + [free_port()] * (2 - replicas)
            lb_log = workdir / "haproxy.log"
            with open(lb_log, "wb") as out:
                lb = subprocess.Popen(
                    [haproxy, "-db", "-f", str(HAPROXY_CONFIG)],
                    env={
                        **os.environ,
                        "LB_BIND": f"127.0.0.1:{dep.port}",
                        "LB_APP1": f"127.0.0.1:{ports[0]}",
                        "LB_APP2": f"127.0.0.1:{ports[1]}",
                    },
                    stdout=out, stderr=subprocess.STDOUT,
                )  # fmt: skip
            procs.append(lb)
            _wait_healthy(dep.url, lb, lb_log)
            # every replica in rotation (HAProxy's checks: rise 2 at 1 s)
            seen: set[str] = set()
            deadline = time.monotonic() + 30
            while len(seen) < replicas and time.monotonic() < deadline:
                seen.add(httpx.get(f"{dep.url}/api/health", timeout=5).json()["replica"])
                time.sleep(0.1)
            if len(seen) < replicas:
                raise RuntimeError(f"the load balancer reaches only {seen}")
            yield dep
        finally:
            for proc in reversed(procs):
                if proc.poll() is None:
                    proc.terminate()
            for proc in procs:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
