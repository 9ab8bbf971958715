"""Settings: the one place that reads the environment (prefix ``STUDIO_``)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

PLACEHOLDER_SECRET = "change-me"
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_FACTORY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def _names(value: Any) -> Any:
    """A list setting from the environment: a JSON list or comma-separated names."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    """Every knob of the app; see README "Configuration"."""

    model_config = SettingsConfigDict(env_prefix="STUDIO_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    database_url: str = ""
    data_root: Path = Path("data")
    secret_key: str = PLACEHOLDER_SECRET
    host: str = "127.0.0.1"
    port: int = 8000

    admin_email: str = "admin@example.com"
    admin_password: str | None = None

    max_workers: int = Field(default=32, ge=1, description="Environment worker processes at once.")
    worker_timeout_s: float = Field(default=10.0, gt=0, description="Wait for any worker reply.")
    worker_start_timeout_s: float = Field(default=60.0, gt=0)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    session_max_age_s: int = 7 * 24 * 3600
    reconnect_grace_s: float = Field(default=30.0, ge=0)
    export_workers: int = Field(default=1, ge=1)

    studies_dir: Path = Path("studies")
    load_sample_studies: bool = True

    # Environments designers may choose besides the catalog (docs/runtime.md, "Allowed
    # environments"): nothing a designer types is imported unless it is on these lists.
    gym_packages: Annotated[list[str], NoDecode] = Field(
        default=["gymnasium", "ale_py", "minigrid"],
        description="Packages whose Gymnasium ids designers may use (comma-separated).",
    )
    dm_env_factories: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="dm_env factories ('package.module:function') designers may use.",
    )

    @field_validator("gym_packages", mode="before")
    @classmethod
    def _package_names(cls, value: Any) -> Any:
        value = _names(value)
        bad = [v for v in value if not isinstance(v, str) or not _MODULE.match(v)]
        if bad:
            raise ValueError(f"not module names: {bad}")
        return value

    @field_validator("dm_env_factories", mode="before")
    @classmethod
    def _factory_names(cls, value: Any) -> Any:
        value = _names(value)
        bad = [v for v in value if not isinstance(v, str) or not _FACTORY.match(v)]
        if bad:
            raise ValueError(f"not 'package.module:function' names: {bad}")
        return value

    @model_validator(mode="after")
    def _defaults_and_secrets(self) -> Settings:
        # Episode rows store log paths: they must not depend on the server's working directory.
        self.data_root = self.data_root.expanduser().resolve()
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_root / 'studio.db').as_posix()}"
        if self.environment == "production" and (
            self.secret_key == PLACEHOLDER_SECRET or len(self.secret_key) < 16
        ):
            raise ValueError(
                "STUDIO_SECRET_KEY must be set to a random string of 16+ characters "
                "outside development"
            )
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (tests build their own and override the dependency)."""
    return Settings()
