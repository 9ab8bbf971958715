"""Whether a dataset's episodes can make one dataset: every environment of every source
study records the same observation and action spaces (one log per environment stands for
it, as an export checks them: :mod:`server.services.exports.spaces`)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from server.errors import Invalid
from server.export import EpisodeInput, ExportError, IncompatibleEnvironmentsError, check_compatible
from server.export.fields import specs_signature
from server.models import Episode
from server.services.exports.selection import INCOMPATIBLE, episode_inputs

FIELDS = ("observation", "action", "reward", "discount")  # specs_signature's order


def env_label(episode: Episode) -> str:
    """How a refusal names an environment: ``study <id>/<env key>``."""
    return f"study {episode.study_id}/{episode.env_key}"


def _signature(ep: EpisodeInput) -> tuple[object, ...]:
    try:
        return tuple(specs_signature(check_compatible([ep])))
    except ExportError as exc:
        raise Invalid(
            f"Cannot check this dataset's spaces: {exc}.",
            detail=[{"loc": ["body", "sources"], "msg": str(exc)}],
        ) from exc


def check_spaces(db: Session, episodes: list[Episode], secret_key: str, data_root: Path) -> None:
    """422 with ``code`` ``incompatible_environments`` when two environments' spaces differ:
    ``environments`` names them (``study <id>/<env key>``, the first one first) and
    ``fields`` what differs (observation, action, reward, discount)."""
    firsts: dict[tuple[int, str], Episode] = {}
    for e in episodes:
        firsts.setdefault((e.study_id, e.env_key), e)
    if len(firsts) < 2:
        return
    reps = list(firsts.values())
    inputs = episode_inputs(db, reps, secret_key, data_root)
    reference = _signature(inputs[0])
    differing: list[int] = []
    fields: set[str] = set()
    for i, ep in enumerate(inputs[1:], start=1):
        signature = _signature(ep)
        changed = {f for f, a, b in zip(FIELDS, reference, signature, strict=True) if a != b}
        if changed:
            differing.append(i)
            fields |= changed
    if not differing:
        return
    try:
        check_compatible([inputs[0], inputs[differing[0]]])
        message = "environments with different spaces"  # pragma: no cover (the check says so)
    except IncompatibleEnvironmentsError as exc:
        message = str(exc)
    raise Invalid(
        f"These episodes cannot make one dataset: {message}.",
        detail=[{"loc": ["body", "sources"], "msg": "environments with different spaces",
                 "environments": [env_label(reps[i]) for i in (0, *differing)],
                 "fields": [f for f in FIELDS if f in fields]}],
        code=INCOMPATIBLE,
    )  # fmt: skip
