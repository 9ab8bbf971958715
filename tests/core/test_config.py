import stat

import pytest
from pydantic import ValidationError

from server.core.config import PLACEHOLDER_SECRET, SECRET_KEY_FILE, Settings


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


def test_environment_variables_use_the_studio_prefix(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the default data root is relative: keep its key file here
    monkeypatch.setenv("STUDIO_PORT", "9123")
    monkeypatch.setenv("STUDIO_DATABASE_URL", "postgresql+psycopg://u@h/db")
    settings = Settings(_env_file=None)
    assert settings.port == 9123
    assert not settings.is_sqlite


def test_without_a_secret_key_one_is_generated_in_the_data_root_and_reused(tmp_path):
    first = Settings(data_root=tmp_path / "a", _env_file=None)
    key_file = tmp_path / "a" / SECRET_KEY_FILE
    assert first.secret_key != PLACEHOLDER_SECRET and len(first.secret_key) >= 32
    assert key_file.read_text().strip() == first.secret_key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    again = Settings(data_root=tmp_path / "a", _env_file=None)
    assert again.secret_key == first.secret_key
    other = Settings(data_root=tmp_path / "b", _env_file=None)
    assert other.secret_key != first.secret_key


def test_an_explicit_secret_key_writes_no_file(tmp_path):
    settings = Settings(data_root=tmp_path / "d", secret_key="k" * 32, _env_file=None)
    assert settings.secret_key == "k" * 32
    assert not (tmp_path / "d" / SECRET_KEY_FILE).exists()


def test_production_does_not_generate_a_key(tmp_path):
    with pytest.raises(ValidationError, match="STUDIO_SECRET_KEY"):
        Settings(environment="production", data_root=tmp_path / "d", _env_file=None)
    assert not (tmp_path / "d" / SECRET_KEY_FILE).exists()


def test_a_readable_key_file_is_made_private_and_an_empty_one_refused(tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    (root / SECRET_KEY_FILE).write_text("s" * 43 + "\n")
    (root / SECRET_KEY_FILE).chmod(0o644)
    assert Settings(data_root=root, _env_file=None).secret_key == "s" * 43
    assert stat.S_IMODE((root / SECRET_KEY_FILE).stat().st_mode) == 0o600
    (root / SECRET_KEY_FILE).write_text("short")
    with pytest.raises(ValidationError, match="secret_key"):
        Settings(data_root=root, _env_file=None)


def test_allowed_environment_lists(monkeypatch, tmp_path):
    defaults = Settings(data_root=tmp_path, _env_file=None)
    assert defaults.gym_packages == ["gymnasium", "ale_py", "minigrid"]
    assert defaults.dm_env_factories == []
    monkeypatch.setenv("STUDIO_GYM_PACKAGES", "gymnasium, lab_envs.gym")
    monkeypatch.setenv("STUDIO_DM_ENV_FACTORIES", '["lab_envs.maze:make", "other:build"]')
    settings = Settings(data_root=tmp_path, _env_file=None)
    assert settings.gym_packages == ["gymnasium", "lab_envs.gym"]
    assert settings.dm_env_factories == ["lab_envs.maze:make", "other:build"]
    monkeypatch.setenv("STUDIO_GYM_PACKAGES", "")
    assert Settings(data_root=tmp_path, _env_file=None).gym_packages == []
    monkeypatch.setenv("STUDIO_DM_ENV_FACTORIES", "os.system")
    with pytest.raises(ValidationError, match="package.module:function"):
        Settings(data_root=tmp_path, _env_file=None)


def test_replica_id_is_host_pid_and_a_random_suffix_once_per_process(tmp_path, monkeypatch):
    import os
    import socket

    monkeypatch.delenv("STUDIO_REPLICA_ID", raising=False)
    one = Settings(data_root=tmp_path, _env_file=None).replica_id
    two = Settings(data_root=tmp_path, _env_file=None).replica_id
    prefix = f"{socket.gethostname()}-{os.getpid()}-"
    assert one.startswith(prefix) and len(one) == len(prefix) + 6
    assert two == one  # one id per process, whatever Settings read it
    monkeypatch.setenv("STUDIO_REPLICA_ID", "app-1")
    assert Settings(data_root=tmp_path, _env_file=None).replica_id == "app-1"
    with pytest.raises(ValidationError, match="replica_id"):
        Settings(data_root=tmp_path, replica_id="app 1/x", _env_file=None)


def test_a_replica_is_dead_after_at_least_three_heartbeats(tmp_path):
    with pytest.raises(ValidationError, match="3 heartbeat intervals"):
        Settings(data_root=tmp_path, heartbeat_interval_s=2.0, replica_dead_after_s=5.0,
                 _env_file=None)  # fmt: skip
    ok = Settings(data_root=tmp_path, heartbeat_interval_s=2.0, replica_dead_after_s=6.0,
                  _env_file=None)  # fmt: skip
    assert ok.replica_dead_after_s == 6.0


def test_the_public_url_is_a_scheme_and_host(tmp_path):
    def public(value: str) -> str:
        return Settings(data_root=tmp_path, public_url=value, _env_file=None).public_url

    assert public("") == ""
    assert public(" https://studio.example.org/ ") == "https://studio.example.org"
    assert public("http://10.0.0.5:8000") == "http://10.0.0.5:8000"
    for bad in ("studio.example.org", "ftp://studio.example.org", "https://example.org/studio",
                "https://example.org?x=1", "https://user@example.org", "https://example.org:port",
                "javascript:alert(1)"):  # fmt: skip
        with pytest.raises(ValidationError, match="STUDIO_PUBLIC_URL"):
            public(bad)
