"""The ``rlds-studio`` console script, run as a user would (a real subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from server.core.db import make_engine, make_sessionmaker
from server.core.passwords import password_problem
from server.errors import Invalid
from server.models import Role, Study, User
from server.services import bootstrap
from tests.factories import run_cli

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
CLI_PASSWORD = "amber walrus teapot"


def test_create_user_import_and_export_study(settings, db, tmp_path):
    res = run_cli(
        settings,
        "create-user",
        "admin@example.com",
        "--password",
        CLI_PASSWORD,
        "--role",
        "admin",
    )
    assert res.returncode == 0, res.stderr
    assert "created admin admin@example.com" in res.stdout

    res = run_cli(settings, "import-study", str(ROOT / "studies" / "cartpole.yaml"))
    assert res.returncode == 0, res.stderr
    study = db.scalar(select(Study))
    assert study is not None and study.name == "CartPole balance"

    out = tmp_path / "out.yaml"
    res = run_cli(settings, "export-study", str(study.id), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert yaml.safe_load(out.read_text())["environments"][0]["source"]["id"] == "CartPole-v1"


@pytest.mark.parametrize(
    ("password", "says"),
    [("12345678", "at least 12 characters"), ("password1234", "common")],
)
def test_create_user_refuses_a_weak_password(settings, db, password, says):
    res = run_cli(settings, "create-user", "x@example.com", "--password", password)
    assert res.returncode == 2
    assert "password" in res.stderr and says in res.stderr
    assert "Traceback" not in res.stderr
    assert db.scalar(select(User)) is None


def test_import_of_a_bad_file_says_where(settings, tmp_path):
    run_cli(settings, "create-user", "admin@example.com", "--password", CLI_PASSWORD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nenvironments:\n  - id: a\n    name: A\n    fps: 1000\n"
        "    source: {kind: gymnasium, id: CartPole-v1}\n"
    )
    res = run_cli(settings, "import-study", str(bad))
    assert res.returncode == 2
    assert "environments" in res.stderr and "fps" in res.stderr
    assert "Traceback" not in res.stderr


def test_unknown_study_export_fails_cleanly(settings):
    res = run_cli(settings, "export-study", "4242")
    assert res.returncode == 1
    assert "no study 4242" in res.stderr


def test_bootstrap_creates_admin_once_and_loads_samples(settings):
    engine = make_engine(settings.database_url)
    with make_sessionmaker(engine)() as db:
        first = bootstrap.bootstrap(settings.model_copy(update={"admin_password": None}), db)
        second = bootstrap.bootstrap(settings, db)
        admins = db.scalars(select(User).where(User.role == Role.admin)).all()
        names = sorted(s.name for s in db.scalars(select(Study)))
    engine.dispose()
    assert first and second is None  # a generated password, printed once
    assert password_problem(first) is None
    assert len(admins) == 1
    assert len(names) == len(list((ROOT / "studies").glob("*.yaml")))
    assert "CartPole balance" in names


def test_a_weak_admin_password_setting_is_refused(settings, db):
    with pytest.raises(Invalid, match="STUDIO_ADMIN_PASSWORD"):
        bootstrap.bootstrap(settings.model_copy(update={"admin_password": "password1234"}), db)
