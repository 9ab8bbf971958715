"""The environment catalog for the study editor, and validation's cached first frames."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path
from fastapi.responses import FileResponse

from server.api.deps import BudgetDep, CurrentUser, SettingsDep
from server.errors import NotFound
from server.schemas.studies import CatalogEntryPublic, PolicyPublic
from server.services.studies import env_validation
from server.services.studies.env_check import allowed_environments

router = APIRouter(prefix="/api", tags=["catalog"])

JPEG: dict[int | str, dict[str, Any]] = {200: {"content": {"image/jpeg": {}}}}
CatalogKey = Path(min_length=1, max_length=100, pattern=r"^[\w.-]+$")
FrameKey = Path(min_length=64, max_length=64, pattern=r"^[0-9a-f]{64}$")
# Cached frames never change (their name is a hash of what built them).
IMMUTABLE = {"Cache-Control": "private, max-age=86400, immutable"}


def _thumbnail_url(key: str) -> str:
    return f"/api/catalog/{key}/thumbnail.jpg"


@router.get("/catalog", response_model=list[CatalogEntryPublic], summary="The catalog")
def read_catalog(_user: CurrentUser, settings: SettingsDep) -> list[dict[str, Any]]:
    """The environments the operator allows designers to pick, with their defaults.

    Each entry's settings JSON Schema describes its ``source.kwargs``; ``installed`` is
    False when its suite is missing here (it cannot be used until the operator installs it);
    ``replays`` says whether its defaults replayed when its first frame was built.
    """
    from server.runtime.catalog import catalog_public

    replays = env_validation.catalog_replays(settings, allowed_environments(settings))
    return [
        {**entry, "thumbnail_url": _thumbnail_url(entry["key"]) if entry["installed"] else None,
         "replays": replays.get(entry["key"])}
        for entry in catalog_public()
    ]  # fmt: skip


@router.get("/catalog/gymnasium-ids", response_model=list[str], summary="Allowed Gymnasium ids")
def read_gymnasium_ids(_user: CurrentUser, settings: SettingsDep) -> list[str]:
    """Ids registered by the packages the operator allows (``STUDIO_GYM_PACKAGES``).

    Listed by a child process that imports those packages (the app never imports them),
    then kept; an empty list when they cannot be listed. Catalog entries are in ``/catalog``.
    """
    from server.runtime.gym_ids import allowed_gym_ids

    return list(allowed_gym_ids(tuple(settings.gym_packages)))


@router.get("/policies", response_model=list[PolicyPublic], summary="Installed policies")
def read_policies(_user: CurrentUser, settings: SettingsDep) -> list[dict[str, Any]]:
    """The shared-autonomy policies a study's environment may name (`policy.id`): those
    the operator installed (entry-point group `rlds_studio.policies`, or `STUDIO_POLICIES`),
    sorted by id. Nothing is imported to list them; an empty list when none is installed.
    """
    from dataclasses import asdict

    from server.runtime.policy_list import installed_policies

    allowed = allowed_environments(settings)
    return [asdict(p) for p in installed_policies(allowed, list(settings.policies))]


@router.get(
    "/catalog/{key}/thumbnail.jpg",
    summary="A catalog entry's first frame",
    response_class=FileResponse,
    responses={**JPEG, 404: {"description": "No such entry, or its suite is not installed."}},
)
def catalog_thumbnail(
    _user: CurrentUser, settings: SettingsDep, budget: BudgetDep, key: str = CatalogKey
) -> FileResponse:
    """Built once in a worker with the entry's defaults (at server start, or on the first
    request), then served from the cache."""
    from server.runtime.catalog import CATALOG

    entry = CATALOG.get(key)
    if entry is None or not entry.installed():
        raise NotFound(f"No installed catalog entry {key!r}.")
    spec = env_validation.catalog_spec(entry)
    allowed = allowed_environments(settings)
    (report,) = env_validation.validate_environments([spec], settings, allowed, budget)
    path = env_validation.frame_path(settings.data_root, env_validation.cache_key(spec, allowed))
    if path is None:
        problems = "; ".join(p["msg"] for p in report["problems"]) or "no frame"
        raise NotFound(f"No first frame for {key!r}: {problems}")
    return FileResponse(path, media_type="image/jpeg", headers=IMMUTABLE)


@router.get(
    "/validation/frames/{key}.jpg",
    summary="A first frame shown by Validate",
    response_class=FileResponse,
    responses={**JPEG, 404: {"description": "No such frame."}},
)
def validation_frame(
    _user: CurrentUser, settings: SettingsDep, key: str = FrameKey
) -> FileResponse:
    """The first frame of an environment as validation built it (cached by its spec's hash)."""
    path = env_validation.frame_path(settings.data_root, key)
    if path is None:
        raise NotFound("No such frame: validate the study again.")
    return FileResponse(path, media_type="image/jpeg", headers=IMMUTABLE)
