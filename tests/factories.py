"""Factories for rows and logged-in clients (used through the ``factory`` fixture)."""

from __future__ import annotations

import functools
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from server.core import security
from server.core.config import Settings
from server.models import Role, Study, User
from server.services.studies import studies, study_files
from server.study_spec import StudySpec

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery"
_counter = itertools.count(1)


@functools.cache
def _password_hash() -> str:
    # argon2 is slow on purpose; tests hash the shared password once.
    return security.hash_password(PASSWORD)


def spec_dict(name: str = "A study", **env: Any) -> dict[str, Any]:
    """A minimal valid spec as JSON (one CartPole environment, overridable)."""
    environment = {
        "id": "cartpole",
        "name": "CartPole",
        "source": {"kind": "gymnasium", "id": "CartPole-v1"},
        **env,
    }
    return {"name": name, "environments": [environment]}


class Factory:
    """Makes users, studies and clients on one test database."""

    def __init__(self, db: Session, app: FastAPI) -> None:
        self.db = db
        self.app = app
        self._clients: list[TestClient] = []

    def user(self, role: Role = Role.designer, email: str | None = None) -> User:
        """An active account with password :data:`PASSWORD` (hashed once per test run)."""
        email = email or f"user{next(_counter)}@example.com"
        user = User(email=email, name=email, role=role, password_hash=_password_hash())
        self.db.add(user)
        self.db.commit()
        return user

    def study(self, owner: User, spec: dict[str, Any] | None = None) -> Study:
        return studies.create_study(
            self.db, owner.id, StudySpec.model_validate(spec or spec_dict())
        )

    def sample_study(self, owner: User, file: str) -> Study:
        return studies.create_study(
            self.db, owner.id, study_files.load_file(ROOT / "studies" / file)
        )

    def client(self, user: User | None = None) -> TestClient:
        """A client, logged in as ``user`` (with the CSRF header set) when given."""
        client = TestClient(self.app)
        client.__enter__()
        self._clients.append(client)
        if user is not None:
            res = client.post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
            assert res.status_code == 200, res.text
            client.headers[security.CSRF_HEADER] = res.json()["csrf_token"]
        return client

    def close(self) -> None:
        for client in self._clients:
            client.__exit__(None, None, None)


def run_cli(
    settings: Settings, *args: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """The ``rlds-studio`` console script in a subprocess, on the test's database and data root."""
    env = {
        **os.environ,
        "STUDIO_DATABASE_URL": settings.database_url,
        "STUDIO_DATA_ROOT": str(settings.data_root),
        "STUDIO_SECRET_KEY": settings.secret_key,
        "STUDIO_ADMIN_EMAIL": settings.admin_email,
    }
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
