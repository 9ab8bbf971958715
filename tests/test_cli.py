"""The ``rlds-studio`` console script, run as a user would (a real subprocess)."""

from __future__ import annotations

from pathlib import Path

import yaml
from sqlalchemy import select

from server.core.db import make_engine, make_sessionmaker
from server.models import Role, Study, User
from server.services import bootstrap
from tests.factories import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_create_user_import_and_export_study(settings, db, tmp_path):
    res = run_cli(
        settings,
        "create-user",
        "admin@example.com",
        "--password",
        "pw-123456789",
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


def test_import_of_a_bad_file_says_where(settings, tmp_path):
    run_cli(settings, "create-user", "admin@example.com", "--password", "pw-123456789")
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
    assert len(admins) == 1
    assert len(names) == len(list((ROOT / "studies").glob("*.yaml")))
    assert "CartPole balance" in names
