"""Liveness and database status."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from sqlalchemy import text

from server import __version__
from server.api.deps import SessionDep, SettingsDep
from server.schemas.base import HealthOut

router = APIRouter(tags=["health"])


@router.get("/api/health", response_model=HealthOut, summary="Version and database status")
def health(db: SessionDep, settings: SettingsDep) -> HealthOut:
    """200 with the version; ``database`` says whether a query went through (the load
    balancer takes a replica out of rotation unless ``status`` is ``ok``)."""
    try:
        db.execute(text("SELECT 1"))
        database: Literal["ok", "unavailable"] = "ok"
    except Exception:
        database = "unavailable"
    return HealthOut(
        status="ok" if database == "ok" else "degraded",
        version=__version__,
        database=database,
        replica=settings.replica_id,
    )
