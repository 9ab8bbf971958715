"""Settings: the one place that reads the environment (prefix ``STUDIO_``)."""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from server.core.replica import process_replica_id

PLACEHOLDER_SECRET = "change-me"
# Outside production, a key generated on first start lives here under the data root.
SECRET_KEY_FILE = "secret_key"
_MIN_SECRET = 16


def _load_or_create_secret(data_root: Path) -> str:
    """The key in ``data_root/secret_key``, written (mode 0600) with a random one if absent."""
    path = data_root / SECRET_KEY_FILE
    try:
        data_root.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            # Written aside then linked into place: a second process starting at the same
            # moment either wins the link or reads the complete file, never a partial one.
            tmp = data_root / f".{SECRET_KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(48) + "\n")
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                tmp.unlink()
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)  # the key signs tickets: nobody else on the machine reads it
        key = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(
            f"cannot read or create the secret key file {path} ({exc.strerror}): "
            "set STUDIO_SECRET_KEY or make the data root writable"
        ) from exc
    if len(key) < _MIN_SECRET:
        raise ValueError(
            f"the secret_key file {path} holds fewer than {_MIN_SECRET} characters: "
            "delete it to have a new key generated, or set STUDIO_SECRET_KEY"
        )
    return key


_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_FACTORY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
_POLICY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}=[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
_NAME_LISTS = {
    "gym_packages": (_MODULE, "module names"),
    "dm_env_factories": (_FACTORY, "'package.module:function' names"),
    "policies": (_POLICY, "'policy-id=package.module:function' pairs"),
}


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
    # The database owner's URL, for migrations at start only; empty: STUDIO_DATABASE_URL.
    # Lets the app itself connect as a role that can read and write rows, not change tables.
    migration_database_url: str = ""
    data_root: Path = Path("data")
    # Empty: outside production, read (or create on first start) <data_root>/secret_key.
    secret_key: str = ""
    host: str = "127.0.0.1"
    port: int = 8000

    admin_email: str = "admin@example.com"
    admin_password: str | None = None

    runtimes_dir: Path | None = Field(
        default=None,
        description="Where the environment runtimes' venvs live (`rlds-studio runtimes "
                    "install NAME`); unset: ~/.cache/rlds-studio/runtimes (docs/runtime.md, "
                    "'Runtimes').",
    )  # fmt: skip
    max_workers: int = Field(default=32, ge=1, description="Environment worker processes at once.")
    sessions_per_worker: int = Field(
        default=1, ge=1, le=64,
        description="Play sessions one worker process may hold, of one study's light "
                    "environment (docs/runtime.md, 'Several sessions per worker').",
    )  # fmt: skip
    warm_workers_per_env: int = Field(
        default=1,
        ge=0,
        le=4,
        description="Workers kept started and built per environment in demand (a play "
        "session of its study opened), so a ready gate opens at once; 0: none "
        "(docs/runtime.md, 'Warm workers').",
    )
    warm_workers_max: int = Field(
        default=4,
        ge=0,
        le=64,
        description="Warm workers in all at once (each counts against max_workers).",
    )
    warm_worker_max_age_s: float = Field(
        default=900.0, gt=0, description="A warm worker older than this is replaced."
    )
    warm_idle_s: float = Field(
        default=600.0,
        gt=0,
        description="An environment nobody asked for this long has its warm workers closed.",
    )
    warm_ping_timeout_s: float = Field(
        default=1.0,
        gt=0,
        description="A warm worker must answer a ping this fast to be handed out (else it "
        "is killed and a new one started).",
    )
    warm_sweep_s: float = Field(
        default=5.0,
        gt=0,
        description="How often dead, aged or stale warm workers are looked for and replaced.",
    )
    stream_lanes: int = Field(
        default=0, ge=0, le=3,
        description="Extra WebSockets a player page opens: frames take turns over them "
                    "(a stalled one is passed over) and an async game's inputs go on each, "
                    "so one lost segment's retransmission stalls one of them, not the game "
                    "(docs/protocol.md, 'Lanes').",
    )  # fmt: skip
    max_background_workers: int = Field(
        default=2, ge=1,
        description="Validation builds and video encodes at once (server/core/budget.py).",
    )  # fmt: skip
    background_queue: int = Field(
        default=8, ge=0, description="Requests that may wait for background room (then 503)."
    )
    background_wait_s: float = Field(
        default=30.0, ge=0, description="The longest wait for background room (then 503)."
    )
    video_max_steps: int = Field(
        default=100_000, ge=1, description="Episodes longer than this get no video (422)."
    )
    validation_cache_max: int = Field(
        default=1000, ge=1, description="Validation reports kept on disk (oldest dropped)."
    )
    worker_timeout_s: float = Field(default=10.0, gt=0, description="Wait for any worker reply.")
    worker_start_timeout_s: float = Field(default=60.0, gt=0)
    catalog_thumbnails_at_start: bool = Field(
        default=True,
        description="Build the first frame of each installed catalog entry (those not cached "
        "yet) in the background at start, so the catalog opens with pictures.",
    )
    catalog_thumbnails_poll_s: float = Field(
        default=15.0,
        gt=0,
        description="How often the background thumbnail builder looks for catalog entries "
        "that became installed while the server runs (a runtime installed), to build theirs.",
    )
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    session_max_age_s: int = 7 * 24 * 3600
    public_url: str = Field(
        default="",
        description="The address people's devices reach this server at (e.g. "
        "https://studio.example.org): a paired phone's link and QR code name it instead of "
        "the address the player page was opened at; empty: the page's address.",
    )
    insecure_cookies: bool = Field(
        default=False,
        description="Production without HTTPS (a LAN trial): login cookies not Secure.",
    )
    login_max_failures: int = Field(
        default=5, ge=1, description="Failed logins per account in a window before 429."
    )
    login_max_failures_per_address: int = Field(
        default=20, ge=1, description="Failed logins per client address in a window before 429."
    )
    login_window_s: float = Field(default=900.0, gt=0, description="The login limits' window.")
    trusted_proxies: str = Field(
        default="",
        description="Comma-separated addresses or networks of reverse proxies whose "
        "X-Forwarded-For gives the client address; empty: the peer address is the client.",
    )
    reconnect_grace_s: float = Field(default=30.0, ge=0)
    ticket_ttl_s: int = Field(
        default=3 * 3600, ge=60, le=24 * 3600,
        description="How long a participant's play ticket opens sockets (a study session).",
    )  # fmt: skip
    export_workers: int = Field(default=1, ge=1)
    # Replay verification (docs/review.md, "Replay verification").
    replay_check_workers: int = Field(
        default=1, ge=0,
        description="Episodes this replica re-simulates at once to verify them (each within "
        "the background budget, at the lowest CPU priority); 0: none.",
    )  # fmt: skip
    replay_check_timeout_s: float = Field(
        default=900.0, gt=0,
        description="A replay that takes longer ends as not replayable (timeout).",
    )  # fmt: skip
    replay_check_memory_mb: int = Field(
        default=8192, ge=256,
        description="The address space a replay process may use (then: not replayable).",
    )  # fmt: skip
    replay_check_cpu_share: float = Field(
        default=1.0, gt=0, le=64,
        description="The most of one core a replay check (or a completion) uses, besides its "
        "lowest priority: the rest is left idle for players' workers waking up.",
    )  # fmt: skip
    defer_observation_images: bool = Field(
        default=True,
        description="A person's step draws only the view shown; the observation's other "
        "images are drawn from the recorded simulator state in the background, before the "
        "episode can be exported (environments that record their state: PickCube, "
        "Robosuite's); only on a replica that runs replay checks (replay_check_workers > 0).",
    )
    db_wait_s: float = Field(
        default=0.0, ge=0,
        description="At start, wait up to this long for the database to answer.",
    )  # fmt: skip
    job_poll_s: float = Field(
        default=1.0, gt=0, description="How often each replica looks for queued jobs."
    )
    job_heartbeat_s: float = Field(
        default=2.0, gt=0, description="How often a replica refreshes the jobs it runs."
    )
    job_stale_s: float = Field(
        default=30.0, gt=0,
        description="A running job whose heartbeat is older is requeued (its replica died).",
    )  # fmt: skip
    # Large exports on Apache Beam (docs/export.md, "Exports on Apache Beam").
    beam_min_steps: int = Field(
        default=100_000, ge=0,
        description="An RLDS export (engine auto) of at least this many steps runs on Beam; "
        "0: only when the request asks for engine beam.",
    )  # fmt: skip
    beam_runner: str = Field(
        default="DirectRunner", min_length=1,
        description="The Beam runner: DirectRunner (this machine), FlinkRunner, SparkRunner, "
        "DataflowRunner, PortableRunner.",
    )  # fmt: skip
    beam_options: str = Field(
        default="",
        description="More pipeline flags for the runner, split as a shell would "
        "(e.g. '--flink_master=host:8081 --environment_type=LOOPBACK').",
    )
    beam_workers: int = Field(
        default=0, ge=0, description="DirectRunner workers (direct_num_workers); 0: one per core."
    )
    beam_running_mode: Literal["multi_processing", "multi_threading", "in_memory"] = Field(
        default="multi_processing", description="The DirectRunner's direct_running_mode."
    )

    # Replicas sharing one database (docs/deploy.md, "Replicas, heartbeats and failover").
    replica_id: str = Field(
        default="", max_length=128, pattern=r"^[A-Za-z0-9._:-]*$",
        description="This process's id among replicas (unique per live process); empty: "
        "hostname-pid-random.",
    )  # fmt: skip
    heartbeat_interval_s: float = Field(
        default=1.0, gt=0, le=60,
        description="How often a replica stamps its heartbeat and writes its live sessions.",
    )  # fmt: skip
    replica_dead_after_s: float = Field(
        default=15.0, gt=0,
        description="A replica whose heartbeat is older than this is dead: another replica "
        "abandons its recording episodes.",
    )  # fmt: skip
    max_workers_total: int = Field(
        default=0, ge=0,
        description="Environment workers at once over all live replicas (0: no cap).",
    )  # fmt: skip
    max_workers_per_study: int = Field(
        default=0, ge=0,
        description="Environment workers at once for one study over all live replicas (0: no cap).",
    )  # fmt: skip
    # A bulk action over at most this many checked episodes runs in the request; a larger
    # one, or one over a filter ("all N matching"), runs as a background job.
    bulk_inline_max: int = Field(default=500, ge=0, le=10_000)

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

    # Shared-autonomy policies designers may name (docs/runtime.md, "Policies"): installed
    # packages' entry points (group rlds_studio.policies) and these.
    policies: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="Policies ('policy-id=package.module:function') designers may name.",
    )
    policy_step_budget_ms: float = Field(
        default=20.0, gt=0, le=1000,
        description="A policy slower than this on a step hands control to the player for "
        "the rest of the episode.",
    )  # fmt: skip

    @field_validator("gym_packages", "dm_env_factories", "policies", mode="before")
    @classmethod
    def _name_lists(cls, value: Any, info: ValidationInfo) -> Any:
        pattern, what = _NAME_LISTS[info.field_name or ""]
        value = _names(value)
        bad = [v for v in value if not isinstance(v, str) or not pattern.match(v)]
        if bad:
            raise ValueError(f"not {what}: {bad}")
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value:
            return ""
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - a port that is no number raises here
        except ValueError:
            parts = urlsplit("")
        if (parts.scheme not in ("http", "https") or not parts.hostname or parts.path
                or parts.query or parts.fragment or "@" in parts.netloc):  # fmt: skip
            raise ValueError(
                "STUDIO_PUBLIC_URL must be a scheme and host (and port), such as "
                "https://studio.example.org, with no path"
            )
        return value

    @model_validator(mode="after")
    def _defaults_and_secrets(self) -> Settings:
        # Episode rows store log paths: they must not depend on the server's working directory.
        self.data_root = self.data_root.expanduser().resolve()
        if not self.replica_id:
            self.replica_id = process_replica_id()
        if self.replica_dead_after_s < 3 * self.heartbeat_interval_s:
            raise ValueError("STUDIO_REPLICA_DEAD_AFTER_S must be at least 3 heartbeat intervals")
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_root / 'studio.db').as_posix()}"
        if self.environment == "production":
            if self.secret_key == PLACEHOLDER_SECRET or len(self.secret_key) < _MIN_SECRET:
                raise ValueError(
                    f"STUDIO_SECRET_KEY must be set to a random string of {_MIN_SECRET}+ "
                    "characters in production"
                )
        elif not self.secret_key:
            self.secret_key = _load_or_create_secret(self.data_root)
        return self

    @property
    def secure_cookies(self) -> bool:
        """Login cookies are ``Secure`` in production unless the operator chose otherwise."""
        return self.environment == "production" and not self.insecure_cookies

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (tests build their own and override the dependency)."""
    return Settings()
