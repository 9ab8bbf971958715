"""Replay of a recorded episode: the frame of a step, every recorded step a page at a time, an
observation's values or image, the reward profile and the MP4 video."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi import Path as Path_
from fastapi.responses import FileResponse
from sqlalchemy.orm import Session

from server.api.deps import BudgetDep, CurrentPrincipal, SessionDep, SettingsDep
from server.api.routes.episodes import NOT_FOUND
from server.errors import Invalid
from server.models import MAX_DB_INT, Episode, EpisodeStatus
from server.services.jobs import episode_videos
from server.services.review import replay, replay_step, review

router = APIRouter(tags=["episodes"])

MAX_OBSERVATION_VALUES = 1_000_000  # a 1000×1000 array; larger ones only as images
JPEG: dict[int | str, dict[str, Any]] = {**NOT_FOUND, 200: {"content": {"image/jpeg": {}}}}


def _cache(request: Request) -> replay.ReaderCache:
    cache: replay.ReaderCache = request.app.state.replay_cache
    return cache


def _log(
    episode_id: str, db: Session, principal: Any, settings: Any
) -> tuple[Episode, Path, tuple[str, int]]:
    episode = review.get_episode(db, principal, episode_id)
    return episode, review.log_dir(episode, settings.data_root), (episode.status, episode.steps)


def _observation(
    episode_id: str,
    step: Annotated[int, Path_(ge=0, le=MAX_DB_INT)],
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    key: Annotated[str, Query(max_length=200, description="a/b inside a dict observation")] = "",
) -> tuple[Episode, str, Any]:
    """The episode, ``key`` and the array of its step's observation ``key`` (both observation
    routes' parameters)."""
    episode, log, version = _log(episode_id, db, principal, settings)
    return episode, key, replay.observation(_cache(request), log, step, key, version)


ObservationDep = Annotated[tuple[Episode, str, Any], Depends(_observation)]


def _jpeg(episode: Episode, jpeg: bytes) -> Response:
    """A JPEG of the episode, cached by the browser once the episode has ended."""
    final = episode.status != EpisodeStatus.recording
    headers = {"Cache-Control": "private, max-age=3600" if final else "no-store"}
    return Response(jpeg, media_type="image/jpeg", headers=headers)


@router.get(
    "/api/episodes/{episode_id}/frames/{step}",
    response_class=Response,
    summary="The frame of a step (JPEG)",
    responses=JPEG,
)
def read_frame(
    episode_id: str,
    step: int,
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> Response:
    """The JPEG the player saw at step ``step`` (0 = the first observation)."""
    episode, log, version = _log(episode_id, db, principal, settings)
    return _jpeg(episode, replay.frame(_cache(request), log, step, version))


@router.get(
    "/api/episodes/{episode_id}/steps",
    summary="Everything recorded per step, a page at a time",
    responses=NOT_FOUND,
)
def read_steps(
    episode_id: str,
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    start: Annotated[int, Query(ge=0, le=MAX_DB_INT)] = 0,
    limit: Annotated[int, Query(ge=1, le=replay.MAX_STEPS_PAGE)] = 200,
) -> dict[str, Any]:
    """Steps ``start..start+limit-1``: observation, action and its meaning, raw input,
    reward, discount, RLDS flags, env info and input latency (docs/review.md)."""
    _, log, version = _log(episode_id, db, principal, settings)
    return replay.steps_page(_cache(request), log, start, limit, version)


@router.get(
    "/api/episodes/{episode_id}/steps/{step}/observation",
    summary="Every value of one observation array",
    responses=NOT_FOUND,
)
def read_observation(observation: ObservationDep) -> dict[str, Any]:
    """The full values of a large observation array (the steps page summarises it)."""
    _, key, array = observation
    if array.size > MAX_OBSERVATION_VALUES:
        raise Invalid(
            f"The array has {array.size} values; at most {MAX_OBSERVATION_VALUES} are listed.",
            detail=[{"loc": ["query", "key"], "msg": "array too large to list"}],
        )
    return {"key": key, "shape": list(array.shape), "dtype": str(array.dtype),
            "values": replay_step.full_values(array)}  # fmt: skip


@router.get(
    "/api/episodes/{episode_id}/steps/{step}/observation.jpg",
    response_class=Response,
    summary="An image observation as a JPEG",
    responses=JPEG,
)
def read_observation_image(observation: ObservationDep) -> Response:
    """An image observation (uint8 H×W or H×W×C) of step ``step``, encoded as JPEG."""
    episode, _, array = observation
    if not replay_step.is_image(array):
        raise Invalid(
            "That observation array is not an image.",
            detail=[{"loc": ["query", "key"], "msg": "not a uint8 H×W(×C) array"}],
        )
    return _jpeg(episode, replay_step.image_jpeg(array))


@router.get(
    "/api/episodes/{episode_id}/rewards",
    summary="Reward profile: per-step reward and return, downsampled",
    responses=NOT_FOUND,
)
def read_rewards(
    episode_id: str,
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    buckets: Annotated[int, Query(ge=1, le=replay.MAX_BUCKETS)] = 1000,
) -> dict[str, Any]:
    """``[step, value]`` points of reward and cumulative return; each of at most ``buckets``
    buckets keeps its extremes, so spikes survive. ``control``: shared autonomy's
    ``[first step, last step, "human" | "policy"]`` runs of who drove (null: no policy)."""
    _, log, version = _log(episode_id, db, principal, settings)
    return replay.reward_profile(_cache(request), log, buckets, version)


@router.get(
    "/api/episodes/{episode_id}/video.mp4",
    response_class=FileResponse,
    summary="The episode as an MP4 video (what the player saw, at the recorded timing)",
    responses={
        **NOT_FOUND,
        200: {"content": {"video/mp4": {}}},
        409: {"description": "The episode is still being recorded."},
        422: {"description": "No recorded frame, or longer than STUDIO_VIDEO_MAX_STEPS."},
        503: {"description": "Too many videos and validations at once; see Retry-After."},
    },
)
def read_video(
    episode_id: str,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    budget: BudgetDep,
) -> FileResponse:
    """H.264 (yuv420p, plays in browsers), each recorded frame shown from the time the worker
    produced its observation (variable frame rate); see docs/export.md, "Videos". Made on the
    first request (once, however many ask at once, step by step in constant memory) and kept
    beside the episode's log until the episode is deleted. Past ``STUDIO_VIDEO_MAX_STEPS``
    steps: 422; when the background budget is full: 503 with Retry-After."""
    episode, log, _ = _log(episode_id, db, principal, settings)
    db.close()  # an encode can take a while: do not hold a connection meanwhile
    path = episode_videos.episode_video(episode, log, budget, settings.video_max_steps)
    return FileResponse(
        path,
        media_type="video/mp4",
        filename=f"episode-{episode.id}.mp4",
        headers={"Cache-Control": "private, no-store"},
    )
