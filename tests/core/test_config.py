import pytest
from pydantic import ValidationError

from server.core.config import PLACEHOLDER_SECRET, Settings


def test_defaults_embed_sqlite_under_the_data_root(tmp_path):
    settings = Settings(data_root=tmp_path / "d", _env_file=None)
    assert settings.database_url == f"sqlite:///{(tmp_path / 'd' / 'studio.db').as_posix()}"
    assert settings.is_sqlite


def test_placeholder_secret_is_refused_outside_development():
    with pytest.raises(ValidationError, match="STUDIO_SECRET_KEY"):
        Settings(environment="production", secret_key=PLACEHOLDER_SECRET, _env_file=None)
    with pytest.raises(ValidationError, match="STUDIO_SECRET_KEY"):
        Settings(environment="production", secret_key="short", _env_file=None)
    ok = Settings(environment="production", secret_key="x" * 32, _env_file=None)
    assert ok.secret_key == "x" * 32


def test_environment_variables_use_the_studio_prefix(monkeypatch):
    monkeypatch.setenv("STUDIO_PORT", "9123")
    monkeypatch.setenv("STUDIO_DATABASE_URL", "postgresql+psycopg://u@h/db")
    settings = Settings(_env_file=None)
    assert settings.port == 9123
    assert not settings.is_sqlite


def test_allowed_environment_lists(monkeypatch):
    defaults = Settings(_env_file=None)
    assert defaults.gym_packages == ["gymnasium", "ale_py", "minigrid"]
    assert defaults.dm_env_factories == []
    monkeypatch.setenv("STUDIO_GYM_PACKAGES", "gymnasium, lab_envs.gym")
    monkeypatch.setenv("STUDIO_DM_ENV_FACTORIES", '["lab_envs.maze:make", "other:build"]')
    settings = Settings(_env_file=None)
    assert settings.gym_packages == ["gymnasium", "lab_envs.gym"]
    assert settings.dm_env_factories == ["lab_envs.maze:make", "other:build"]
    monkeypatch.setenv("STUDIO_GYM_PACKAGES", "")
    assert Settings(_env_file=None).gym_packages == []
    monkeypatch.setenv("STUDIO_DM_ENV_FACTORIES", "os.system")
    with pytest.raises(ValidationError, match="package.module:function"):
        Settings(_env_file=None)
