"""Shared fixtures: a migrated database per test (SQLite, or PostgreSQL when
``STUDIO_TEST_DATABASE_URL`` is set), settings, the app and logged-in clients."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from server.core.config import Settings
from server.core.db import Base, make_engine, make_sessionmaker
from server.core.migrate import upgrade_head
from tests.factories import Factory
from tests.runtime.fake_envs import FACTORIES

pytest_plugins = ["tests.timings"]  # each test's wall and CPU seconds, slow modules first

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("STUDIO_TEST_DATABASE_URL", "")


def pg_schema_url(base: str, schema: str) -> str:
    """``base`` with every connection's search_path set to ``schema``."""
    url = make_url(base)
    return url.set(query={**url.query, "options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The PostgreSQL pass runs only the tests where the database plays a part: a test with a
    database fixture that is not a browser test, or any test of a module that reads ``PG_URL``;
    a module may decide for itself with ``ON_POSTGRES = True`` or ``False``, a test with the
    marker ``database_plays_no_part`` (it checks what an export wrote or a consumer loaded,
    whose rows and claims the tests beside it cover on PostgreSQL). The others ran in
    the SQLite pass: a browser test drives the same services, whose queries, races and
    migrations the API and service tests already cover on PostgreSQL.
    ``STUDIO_TEST_ALL_ON_PG=1`` runs everything again."""
    _modules_together(items)
    if not PG_URL or os.environ.get("STUDIO_TEST_ALL_ON_PG"):
        return
    keep: list[pytest.Item] = []
    skip: list[pytest.Item] = []
    for item in items:
        module = getattr(item, "module", None)
        chosen = getattr(module, "ON_POSTGRES", None)  # a module's own choice, if it made one
        uses_db = "migrated_template" in getattr(item, "fixturenames", ())
        browser = item.get_closest_marker("browser") is not None
        on_pg = hasattr(module, "PG_URL") or (uses_db and not browser)
        if item.get_closest_marker("database_plays_no_part") is not None:
            chosen = False
        (keep if (on_pg if chosen is None else chosen) else skip).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
        items[:] = keep


@pytest.fixture(autouse=True, scope="session")
def _light_password_hashes() -> Iterator[None]:
    """argon2id with its cheapest parameters in this test process: every app a test starts
    hashes its admin's password and every login verifies one, and the production cost
    (64 MiB, three passes, four lanes: tenths of a second of both cores) was minutes of the
    suite. The algorithm, the code and what each test asserts are the same; servers the
    tests start as processes of their own hash at the production cost."""
    from argon2 import PasswordHasher

    from server.core import security

    saved = security._hasher, security._DUMMY_HASH
    security._hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    security._DUMMY_HASH = None  # made anew with these parameters
    yield
    security._hasher, security._DUMMY_HASH = saved


def _modules_together(items: list[pytest.Item]) -> None:
    """Under ``make test`` (``--dist loadgroup``) a module's tests run in one worker, so its
    module-scoped browser, server or recordings start once; a module that sets
    ``SPREAD = True`` (long, with nothing set up per module) has its tests spread over the
    workers instead."""
    for item in items:
        if not getattr(getattr(item, "module", None), "SPREAD", False):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database migrated to head once per run: a SQLite file, or a fresh PostgreSQL schema."""
    if PG_URL:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        admin = make_engine(PG_URL)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = pg_schema_url(PG_URL, schema)
        upgrade_head(url)
        yield url
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
    else:
        path = tmp_path_factory.mktemp("template") / "template.db"
        upgrade_head(f"sqlite:///{path}")
        yield str(path)


@pytest.fixture
def database_url(migrated_template: str, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database for one test."""
    if PG_URL:
        engine = make_engine(migrated_template)
        names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
        with engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
        engine.dispose()
        yield migrated_template
    else:
        path = tmp_path / "studio.db"
        shutil.copyfile(migrated_template, path)
        yield f"sqlite:///{path}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Test settings: own database and data root, the repo's sample studies."""
    return Settings(
        environment="test",
        database_url=database_url,
        data_root=tmp_path / "data",
        secret_key="test-secret-key-0123456789",
        studies_dir=ROOT / "studies",
        admin_email="admin@example.com",
        admin_password="admin-password",
        max_body_bytes=256 * 1024,
        dm_env_factories=FACTORIES,
        catalog_thumbnails_at_start=False,  # tests build what they need (two cores)
        replay_check_workers=0,  # the replay tests turn verification on (two cores)
        warm_workers_per_env=0,  # no worker beside each player's (tests/runtime/test_warm_pool.py)
    )


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    eng = make_engine(settings.database_url)
    yield eng
    eng.dispose()


@pytest.fixture
def db(engine: Engine) -> Iterator[Session]:
    """A session on the test's database."""
    with make_sessionmaker(engine)() as session:
        yield session


@pytest.fixture
def app(settings: Settings):  # type: ignore[no-untyped-def]
    from server.main import create_app

    return create_app(settings)


@pytest.fixture
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """An anonymous client; startup and shutdown run."""
    with TestClient(app) as c:
        yield c


@pytest.fixture
def factory(db: Session, app) -> Iterator[Factory]:  # type: ignore[no-untyped-def]
    """Rows and logged-in clients."""
    made = Factory(db, app)
    yield made
    made.close()


# --- a live server and real Chromium, for browser tests -----------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


@pytest.fixture
def live_server(app) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The app served by uvicorn on a free loopback port (in a thread); yields its base URL."""
    import socket
    import threading
    import time

    import uvicorn

    from server.main import SERVE_OPTIONS

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", **SERVE_OPTIONS)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the live server did not start")
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=20)
    sock.close()


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    """Debian's Chromium driven by Playwright (its own browser download is not used).

    Module-scoped: Playwright's sync API keeps an event loop running in the main thread
    while it is open, which would break ``asyncio.run`` in any test collected after it.
    """
    from playwright.sync_api import expect, sync_playwright

    # Assertions wait as long as actions do: on a busy 2-core machine, building an
    # environment in a worker (activation, the first frame) can take more than 5 s.
    expect.set_options(timeout=15_000)
    if not Path(CHROMIUM).exists():
        pytest.fail("Browser tests need Debian's chromium at /usr/bin/chromium: run `make test`.")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@contextmanager
def watched_page(browser, viewport: dict[str, int], timeout_ms: int = 15_000):  # type: ignore[no-untyped-def]
    """A page in a browser context of its own (a person's own browser); script errors and
    CSP violations fail the test."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    page.set_default_timeout(timeout_ms)
    yield page
    context.close()
    assert not errors, f"JavaScript errors or CSP violations on the page: {errors}"


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    """A fresh browser context and page at 1280x800 (:func:`watched_page`)."""
    with watched_page(browser, {"width": 1280, "height": 800}) as page:
        yield page


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Real envlogger logs of a few CartPole and MountainCar episodes, recorded once per run."""
    from tests.api.routes.recorded import record_set

    return record_set(tmp_path_factory.mktemp("recorded"))


@pytest.fixture(scope="session")
def long_recording(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real 20,000-step envlogger log (a fast CartPole-like env), recorded once per run."""
    from tests.api.routes.recorded import LONG_STEPS, record_long

    return record_long(tmp_path_factory.mktemp("long"), LONG_STEPS)
