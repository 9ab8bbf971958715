"""The image and compose file cannot be built here (no container engine): they are checked
to parse and to run what the native deployment test runs (docker/start.sh,
docker/haproxy.cfg), with settings the app knows."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from server.core.config import Settings
from tests.deploy.harness import HAPROXY_CONFIG, SERVERS, START_SCRIPT

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
KNOWN_ELSEWHERE = {"STUDIO_REPLICA_ID"}  # read by server/core/replica.py
# read by docker/initdb/10-app-role.sh (the db service's environment)
INITDB_SETTINGS = {"STUDIO_DB_APP_USER", "STUDIO_DB_APP_PASSWORD"}
SETTINGS = {f"STUDIO_{name.upper()}" for name in Settings.model_fields} | KNOWN_ELSEWHERE


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of docker/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines]


def _compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_dockerfile_installs_the_lock_runs_start_sh_as_non_root() -> None:
    steps = _dockerfile()
    froms = [args for op, args in steps if op == "FROM"]
    assert [f.split()[0] for f in froms] == ["python:3.11-slim-bookworm"] * 2
    runs = " ".join(args for op, args in steps if op == "RUN")
    # the app's lock, no resolving; every environment runtime from its own lock, the robot
    # arms' (robotics) included
    assert "pip install -q -r /tmp/run.txt" in runs and "--no-deps -e /app" in runs
    assert ("COPY", "requirements/run.txt /tmp/") in steps
    assert "rlds-studio runtimes install $RUNTIMES" in runs
    runtimes = {args for op, args in steps if op == "ARG" and args.startswith("RUNTIMES=")}
    assert runtimes == {'RUNTIMES="robosuite dm_control nethack robotics"'}
    for op, args in steps:  # every file copied from the build context exists
        if op == "COPY" and not args.startswith("--from"):
            for source in args.split()[:-1]:
                assert (ROOT / source).exists(), source
    users = [args for op, args in steps if op == "USER"]
    assert users == ["studio"]
    assert [args for op, args in steps if op == "CMD"] == ['["/app/docker/start.sh"]']
    assert START_SCRIPT.relative_to(ROOT).as_posix() in " ".join(a for _, a in steps)
    health = next(args for op, args in steps if op == "HEALTHCHECK")
    assert "/api/health" in health and "STUDIO_PORT" in health
    env = " ".join(args for op, args in steps if op == "ENV")
    assert set(re.findall(r"\b(STUDIO_\w+)=", env)) <= SETTINGS
    assert ("VOLUME", '["/data"]') in steps and "STUDIO_DATA_ROOT=/data" in env


def test_compose_runs_the_image_start_sh_and_the_shipped_haproxy_config() -> None:
    compose = _compose()
    services = compose["services"]
    assert set(services) == {"db", "lb", *SERVERS}
    for name in SERVERS:
        app = services[name]
        assert app["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
        assert app["command"] == ["/app/docker/start.sh"]
        assert "studio-data:/data" in app["volumes"]  # one shared data root
        env = app["environment"]
        assert set(env) <= SETTINGS, set(env) - SETTINGS
        assert env["STUDIO_DATA_ROOT"] == "/data" and env["STUDIO_REPLICA_ID"] == name
        assert env["STUDIO_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert "@db:5432/" in env["STUDIO_DATABASE_URL"]
        assert app["depends_on"]["db"]["condition"] == "service_healthy"
    lb = services["lb"]
    mount = next(v for v in lb["volumes"] if v.endswith(":/usr/local/etc/haproxy/haproxy.cfg:ro"))
    assert (DOCKER / mount.split(":")[0]).resolve() == HAPROXY_CONFIG
    config = HAPROXY_CONFIG.read_text()
    used = set(re.findall(r"\$\{(\w+)\}", config))
    assert used == set(lb["environment"])
    # each replica service is one HAProxy server, at the address the config takes
    for i, name in enumerate(SERVERS, start=1):
        assert f'server {name} "${{LB_APP{i}}}" cookie {name}' in config
        assert lb["environment"][f"LB_APP{i}"] == f"{name}:8000"


def test_haproxy_accepts_the_config_and_start_sh_parses() -> None:
    haproxy = shutil.which("haproxy")
    assert haproxy, "HAProxy is not installed: run `make haproxy`"
    env = {"LB_BIND": "127.0.0.1:8080", "LB_APP1": "127.0.0.1:8001", "LB_APP2": "127.0.0.1:8002"}
    checked = subprocess.run(
        [haproxy, "-c", "-f", str(HAPROXY_CONFIG)], env=env, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert subprocess.run(["sh", "-n", str(START_SCRIPT)]).returncode == 0
    assert "-m server.cli serve" in START_SCRIPT.read_text()


def test_every_setting_is_documented_for_deployments() -> None:
    doc = (ROOT / "docs" / "deploy.md").read_text()
    missing = sorted(name for name in SETTINGS if f"`{name}`" not in doc)
    assert not missing, f"docs/deploy.md does not describe {missing}"


def test_compose_starts_as_documented() -> None:
    """The issue's deployment findings: admin password passed through, a cookie choice,
    a grace period over the reconnect grace, init, a load balancer that starts with any
    healthy replica and has a health check, an app role that is not the owner."""
    compose = _compose()
    services = compose["services"]
    grace = Settings.model_fields["reconnect_grace_s"].default
    for name in SERVERS:
        app = services[name]
        env = app["environment"]
        assert env["STUDIO_ADMIN_PASSWORD"] == "${STUDIO_ADMIN_PASSWORD:-}"
        assert env["STUDIO_INSECURE_COOKIES"] == "${STUDIO_INSECURE_COOKIES:-false}"
        assert app["init"] is True
        assert int(app["stop_grace_period"].removesuffix("s")) > float(
            env.get("STUDIO_RECONNECT_GRACE_S", grace)
        )
        app_url, owner_url = env["STUDIO_DATABASE_URL"], env["STUDIO_MIGRATION_DATABASE_URL"]
        app_user = app_url.split("://", 1)[1].split(":", 1)[0]
        owner_user = owner_url.split("://", 1)[1].split(":", 1)[0]
        assert owner_user == services["db"]["environment"]["POSTGRES_USER"] != app_user
        assert app_user == services["db"]["environment"]["STUDIO_DB_APP_USER"]
    db = services["db"]
    assert "./initdb:/docker-entrypoint-initdb.d:ro" in db["volumes"]
    assert set(db["environment"]) - {"POSTGRES_USER", "POSTGRES_DB", "POSTGRES_PASSWORD"} <= (
        INITDB_SETTINGS
    )
    script = (DOCKER / "initdb" / "10-app-role.sh").read_text()
    assert "NOSUPERUSER" in script and "ALTER DEFAULT PRIVILEGES" in script
    assert subprocess.run(["sh", "-n", str(DOCKER / "initdb" / "10-app-role.sh")]).returncode == 0
    lb = services["lb"]
    assert {dep["condition"] for dep in lb["depends_on"].values()} == {"service_started"}
    assert "/lb-health" in " ".join(lb["healthcheck"]["test"])
    config = HAPROXY_CONFIG.read_text()
    assert "monitor-uri /lb-health" in config and "init-addr last,libc,none" in config


def test_every_setting_the_deploy_doc_names_is_read_by_the_code() -> None:
    doc = (ROOT / "docs" / "deploy.md").read_text()
    named = set(re.findall(r"`(STUDIO_[A-Z0-9_]*[A-Z0-9])`", doc))
    unknown = sorted(named - SETTINGS - INITDB_SETTINGS)
    assert not unknown, f"docs/deploy.md names settings nothing reads: {unknown}"
