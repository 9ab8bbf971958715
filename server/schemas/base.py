"""What every area's bodies share: responses read from rows, and health."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Public(BaseModel):
    """A response read from a row's attributes (``model_validate(row)``)."""

    model_config = ConfigDict(from_attributes=True)


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: Literal["ok", "unavailable"]
    replica: str = Field(description="Which app replica answered (STUDIO_REPLICA_ID).")
