"""The FastAPI application: routes, error mapping, body limit and the static web pages."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from sqlalchemy.orm import Session
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from server import __version__
from server.api.pages import PageFiles
from server.api.routes import (
    auth,
    bulk,
    catalog,
    crowd,
    dataset_edits,
    datasets,
    episodes,
    exports,
    feedback,
    health,
    judge,
    live,
    narrations,
    phone,
    play,
    replay,
    studies,
    study_editor,
    users,
)
from server.core import security
from server.core.budget import ProcessBudget
from server.core.config import Settings, get_settings
from server.core.db import make_engine, make_sessionmaker
from server.core.headers import SECURITY_HEADERS, SecurityHeadersMiddleware
from server.core.replica import ReplicaInfo
from server.errors import Busy, DomainError, validation_detail
from server.export.runner import ExportPayload, ExportRunner
from server.models import ExportJob
from server.player.heartbeat import Heartbeat
from server.player.protocol import MAX_MESSAGE_BYTES
from server.player.registry import Registry
from server.runtime import runtimes
from server.runtime.warm_pool import WarmPool
from server.services.exports import exports as export_service
from server.services.jobs.bulk_runner import BulkRunner
from server.services.jobs.replay_checks import ReplayCheckRunner
from server.services.live.live_feed import LiveFeed
from server.services.login_limit import LoginLimiter
from server.services.review.replay import ReaderCache

log = logging.getLogger(__name__)
WEB_DIR = Path(__file__).resolve().parent.parent / "web"

DESCRIPTION = """
Collect human demonstrations in RL environments and ship them as RLDS datasets.

Designers log in (`POST /api/auth/login`) and get an HTTP-only session cookie; every
state-changing request must also carry the `X-CSRF-Token` header with the value of the
`studio_csrf` cookie. Errors are JSON: `{"detail": ...}`.
"""


class _BodyTooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """Answer 413 to request bodies over ``limit`` bytes (declared or streamed)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._reject(send)
                return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Send) -> None:
        response = JSONResponse(
            {"detail": f"Request body too large (limit {self.limit} bytes)."}, status_code=413
        )
        await response({"type": "http"}, _empty_receive, send)


class NulInUrlMiddleware:
    """Answer 422 to a URL whose path or query holds a NUL character.

    No id, name or filter contains one, and PostgreSQL text cannot: refusing it here keeps
    it out of every query instead of failing in the database with a 500.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query = unquote_to_bytes(scope.get("query_string", b""))
            where = (
                "path" if "\x00" in scope.get("path", "") else "query" if b"\x00" in query else ""
            )
            if where:
                response = JSONResponse(
                    {
                        "detail": [{"loc": [where], "msg": "NUL character", "type": "value_error"}],
                        "message": "The URL cannot contain NUL characters.",
                    },
                    status_code=422,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _empty_receive() -> Message:
    return {"type": "http.disconnect"}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(_: Request, exc: DomainError) -> JSONResponse:
        body: dict[str, Any] = {"detail": exc.detail if exc.detail is not None else exc.message}
        if exc.detail is not None:
            body["message"] = exc.message
        if exc.code is not None:
            body["code"] = exc.code
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, Busy) else None
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"detail": validation_detail(exc.errors()), "message": "The request is not valid."},
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, RecursionError):
            # FastAPI's JSON body parsing gave up on a too deeply nested body: the client's
            # input, not a server fault (specs refuse kwargs deeper than a few levels anyway).
            detail = [{"loc": ["body"], "msg": "JSON nested too deeply", "type": "json_invalid"}]
            return JSONResponse(
                {"detail": detail, "message": "The request body is nested too deeply."},
                status_code=422,
            )
        # Headers kept: Retry-After of a 429, Allow of a 405.
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Logged with its traceback here; the client gets no internals.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        # Answered outside the middleware stack (Starlette's ServerErrorMiddleware): the
        # security headers are added here.
        return JSONResponse(
            {"detail": "Internal error; it has been logged."},
            status_code=500,
            headers=SECURITY_HEADERS,
        )


# How uvicorn serves the app. Frames are JPEG, which deflate cannot shrink: permessage-deflate
# would only spend CPU on both ends of every socket (see docs/performance.md).
# ws_max_size: the player refuses client messages over MAX_MESSAGE_BYTES with a ``too_large``
# error and close 1008; uvicorn closes sockets sending more than twice that with 1009 as soon
# as a frame header names the length, without reading it (uvicorn's default reads 16 MiB).
# uvicorn's proxy headers are off: it would trust X-Forwarded-For from 127.0.0.1 by default;
# the app trusts only STUDIO_TRUSTED_PROXIES (create_app).
SERVE_OPTIONS: dict[str, Any] = {
    "ws": "websockets-sansio",
    "ws_per_message_deflate": False,
    "ws_max_size": 2 * MAX_MESSAGE_BYTES,
    "proxy_headers": False,
}


def _job_payload(settings: Settings, db: Session, job: ExportJob) -> ExportPayload:
    """A claimed export job's payload, with this replica's settings (read at claim time)."""
    if job.dataset_id is not None:
        from server.services.datasets import exports as dataset_exports

        return dataset_exports.payload_of(
            db,
            job,
            secret_key=settings.secret_key,
            data_root=settings.data_root,
            engines=export_service.Engines.from_settings(settings),
        )
    return export_service.payload_of(
        db,
        job,
        secret_key=settings.secret_key,
        data_root=settings.data_root,
        engines=export_service.Engines.from_settings(settings),
    )


def _start_thumbnails(settings: Settings) -> tuple[threading.Event, threading.Thread] | None:
    """The catalog's first frames, built in a background thread (each in a worker process)
    so the catalog opens with pictures, then again for a suite that becomes installed while
    the server runs (``rlds-studio runtimes install NAME``), looked for every
    ``catalog_thumbnails_poll_s``; None when the settings turn it off."""
    if not settings.catalog_thumbnails_at_start:
        return None
    from server.services.studies.env_check import allowed_environments
    from server.services.studies.env_validation import warm_catalog

    stop = threading.Event()

    def run() -> None:
        tried: set[str] = set()
        while not stop.is_set():
            try:
                built = warm_catalog(settings, allowed_environments(settings), stop, tried)
                if built:
                    log.info("catalog thumbnails: %d built", built)
            except Exception:  # a missing suite or a failed build must not stop the server
                log.exception("catalog thumbnails failed")
            stop.wait(settings.catalog_thumbnails_poll_s)

    thread = threading.Thread(target=run, name="catalog-thumbnails", daemon=True)
    thread.start()
    return stop, thread


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app for ``settings`` (the process settings by default).

    The database must already be migrated (``rlds-studio serve`` does it); the app never
    creates tables.
    """
    settings = settings or get_settings()
    engine = make_engine(settings.database_url)
    runtimes.configure(settings.runtimes_dir)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_root.mkdir(parents=True, exist_ok=True)
        # so that the first login of an unknown email costs what every other login costs
        await asyncio.to_thread(security.dummy_hash)
        app.state.export_jobs.start()
        await app.state.heartbeat.start()  # registers this replica before anything is served
        app.state.bulk_jobs.start()
        if settings.replay_check_workers:
            app.state.replay_checks.start()
        thumbnails = _start_thumbnails(settings)
        sweeping = asyncio.get_running_loop().create_task(warm.run(settings.warm_sweep_s))
        # each runtime checked in its interpreter once, before the catalog is first asked
        threading.Thread(target=runtimes.states, name="runtime-check", daemon=True).start()
        yield
        if thumbnails is not None:
            thumbnails[0].set()  # the entry being built finishes; no other starts
            await asyncio.to_thread(thumbnails[1].join, settings.worker_start_timeout_s)
        sweeping.cancel()
        await app.state.live_feed.close()
        await app.state.player_registry.close_all()  # episodes abandoned, workers stopped
        await warm.close()
        await app.state.heartbeat.stop()  # this replica's rows removed
        # Waits for canceled export processes; off the event loop.
        await asyncio.to_thread(app.state.export_jobs.stop)
        await asyncio.to_thread(app.state.bulk_jobs.stop)
        if settings.replay_check_workers:
            await asyncio.to_thread(app.state.replay_checks.stop)
        app.state.replay_cache.close()
        engine.dispose()

    # /docs is the vendored Swagger UI (web/docs.html): FastAPI's own pages load it from a
    # CDN with an inline script, which the Content-Security-Policy forbids.
    app = FastAPI(
        title="RLDS Studio",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.sessionmaker = make_sessionmaker(engine)
    warm = WarmPool(
        per_env=settings.warm_workers_per_env,
        max_total=settings.warm_workers_max,
        max_age_s=settings.warm_worker_max_age_s,
        idle_s=settings.warm_idle_s,
        ping_timeout_s=settings.warm_ping_timeout_s,
    )
    registry = app.state.player_registry = Registry(warm)
    # warm workers count against the budget as players' do; they fill only what is free
    app.state.budget = budget = ProcessBudget(
        max_workers=settings.max_workers,
        max_background=settings.max_background_workers,
        queue=settings.background_queue,
        wait_s=settings.background_wait_s,
        players=lambda: registry.workers_in_use() + warm.size(),
    )
    warm.room = lambda: (
        settings.max_workers - registry.workers_in_use() - budget.in_use - (warm.size())
    )
    app.state.export_jobs = ExportRunner(
        settings.data_root,
        app.state.sessionmaker,
        partial(_job_payload, settings),
        settings.export_workers,
        poll_s=settings.job_poll_s,
        heartbeat_s=settings.job_heartbeat_s,
        stale_s=settings.job_stale_s,
        replica=settings.replica_id,
        budget=app.state.budget,
    )
    app.state.bulk_jobs = BulkRunner(
        settings.data_root,
        app.state.sessionmaker,
        poll_s=settings.job_poll_s,
        heartbeat_s=settings.job_heartbeat_s,
        stale_s=settings.job_stale_s,
        replica=settings.replica_id,
    )
    app.state.replay_checks = ReplayCheckRunner(
        settings,
        app.state.sessionmaker,
        settings.replay_check_workers,
        poll_s=settings.job_poll_s,
        heartbeat_s=settings.job_heartbeat_s,
        stale_s=settings.job_stale_s,
        replica=settings.replica_id,
        budget=app.state.budget,
    )
    app.state.replay_cache = ReaderCache()
    app.state.replica = ReplicaInfo.current(settings.replica_id, f"{settings.host}:{settings.port}")
    app.state.heartbeat = Heartbeat(
        app.state.player_registry, settings, app.state.sessionmaker, app.state.replica
    )
    app.state.live_feed = LiveFeed(app.state.sessionmaker, settings)
    app.state.login_limiter = LoginLimiter(
        max_per_pair=settings.login_max_failures,
        max_per_address=settings.login_max_failures_per_address,
        window_s=settings.login_window_s,
    )
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    app.add_middleware(NulInUrlMiddleware)
    if settings.trusted_proxies:
        # Only these peers' X-Forwarded-For is believed (uvicorn's own is turned off).
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    # Outermost, so answers of the other middlewares (413, 422) carry the headers too.
    app.add_middleware(SecurityHeadersMiddleware)
    _install_error_handlers(app)
    for module in (
        health,
        auth,
        users,
        study_editor,
        studies,
        catalog,
        play,
        phone,
        crowd,
        feedback,
        judge,
        episodes,
        replay,
        narrations,
        bulk,
        exports,
        datasets,
        dataset_edits,
        live,
    ):
        app.include_router(module.router)

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> FileResponse:
        return FileResponse(WEB_DIR / "docs.html")

    app.mount("/", PageFiles(directory=WEB_DIR, html=True), name="web")
    return app
