"""Study versions: one study's episodes always share one meaning.

A change to what an environment's recorded data means - its source (id or factory and
settings), its resolved controls, its mode and fps (the time a step stands for), its camera
(what the player saw) - is refused on an environment that has participants' episodes
(``needs_new_version``, 409). The designer saves such a change as a new version instead: a
new draft study linked to the old one by ``parent_study_id``. Everything else (names,
texts, quotas, seeds, limits, image quality, crowd settings) is saved in place.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.errors import Conflict
from server.models import Episode, Study, StudyState
from server.services.studies import studies
from server.study_spec import DmEnvSource, EnvironmentSpec, GymnasiumSource, StudySpec

NEEDS_NEW_VERSION = "needs_new_version"
# Environment fields whose change alters the meaning of recorded episodes.
MEANING_FIELDS = ("source", "controls", "mode", "fps", "camera")
_VERSION_SUFFIX = re.compile(r" v(\d+)$")
MAX_NAME = 200


def _source_meaning(source: GymnasiumSource | DmEnvSource) -> dict[str, Any]:
    """The source with every default filled: the model's, and a catalog environment's
    settings (its schema's defaults) for those the study leaves out."""
    from server.runtime.catalog import find_entry  # the runtime is imported lazily

    data = source.model_dump(mode="json")
    entry = find_entry(source)
    if entry is not None:
        props = entry.schema.get("properties", {})
        defaults = {
            k: p["default"] for k, p in props.items() if isinstance(p, dict) and "default" in p
        }
        data["kwargs"] = {**defaults, **data["kwargs"]}
    return data


def _meaning(env: EnvironmentSpec) -> dict[str, Any]:
    """What an environment's episodes mean, every default filled in: studies store only the
    values the designer set (:func:`server.services.studies.study_files.spec_data`), and writing a
    default out, or leaving it implicit, is the same meaning. Controls left out are the
    catalog's."""
    from server.runtime.catalog import default_controls  # the runtime is imported lazily

    controls = env.controls if env.controls is not None else default_controls(env.source)
    return {
        "source": _source_meaning(env.source),
        "controls": controls.model_dump(mode="json"),
        "mode": env.mode,
        "fps": env.fps if env.mode == "async" else None,  # sync mode has no pace
        "camera": env.camera,
    }


def meaning_changes(old: StudySpec, new: StudySpec) -> list[dict[str, Any]]:
    """``{"loc", "msg", "env"}`` for each meaning field of a kept environment that changed."""
    changes: list[dict[str, Any]] = []
    before = {env.id: env for env in old.environments}
    for index, env in enumerate(new.environments):
        if env.id not in before:
            continue  # a new environment has no episodes yet
        was, now = _meaning(before[env.id]), _meaning(env)
        for name in MEANING_FIELDS:
            if name == "fps" and was["mode"] != now["mode"]:
                continue  # the mode's change says it
            if was[name] != now[name]:
                changes.append(
                    {
                        "loc": ["environments", index, name],
                        "msg": f"changes what the recorded episodes of {env.id!r} mean",
                        "env": env.id,
                    }
                )
    return changes


def recorded_envs(db: Session, study: Study) -> set[str]:
    """Environment keys with participants' (non-test) episodes."""
    rows = db.scalars(
        select(Episode.env_key)
        .where(Episode.study_id == study.id, Episode.is_test.is_(False))
        .group_by(Episode.env_key)
    )
    return set(rows)


def check_in_place(db: Session, study: Study, spec: StudySpec) -> None:
    """409 ``needs_new_version`` when ``spec`` changes the meaning of an environment that
    has participants' episodes (drafts have none: they save anything in place)."""
    if study.state == StudyState.draft:
        return
    recorded = recorded_envs(db, study)
    changes = [c for c in meaning_changes(studies.spec_of(study), spec) if c["env"] in recorded]
    if changes:
        names = ", ".join(dict.fromkeys(c["env"] for c in changes))
        raise Conflict(
            f"Participants have played {names}: this change alters what their episodes mean. "
            "Save it as a new version of the study.",
            code=NEEDS_NEW_VERSION,
            detail=[{"loc": c["loc"], "msg": c["msg"]} for c in changes],
        )


def version_number(db: Session, study: Study) -> int:
    """1 for an original study, 2 for a version of it, and so on."""
    number, parent_id, seen = 1, study.parent_study_id, {study.id}
    while parent_id is not None and parent_id not in seen:
        seen.add(parent_id)
        number += 1
        parent_id = db.scalar(select(Study.parent_study_id).where(Study.id == parent_id))
    return number


def version_name(name: str, number: int) -> str:
    """``name`` with its ``vN`` suffix replaced by `` v<number>`` (fitting 200 characters)."""
    suffix = f" v{number}"
    base = _VERSION_SUFFIX.sub("", name).rstrip()
    return base[: MAX_NAME - len(suffix)] + suffix


def create_version(db: Session, study: Study, spec: StudySpec) -> Study:
    """A new draft with ``spec``, owned by the study's owner and linked to ``study``."""
    next_number = version_number(db, study) + 1
    # several versions of one study: the next number after the highest so far
    siblings = db.scalar(
        select(func.count()).select_from(Study).where(Study.parent_study_id == study.id)
    )
    name = version_name(spec.name, next_number + int(siblings or 0))
    new_spec = spec.model_copy(update={"name": name})
    return studies.create_study(db, study.owner_id, new_spec, parent_study_id=study.id)


def update_in_place(db: Session, study: Study, spec: StudySpec, data_root: Path) -> Study:
    """Save ``spec`` over the study's (see :func:`studies.update_study`), unless it changes
    the meaning of recorded episodes (409 ``needs_new_version``)."""
    if study.state in studies.EDITABLE:  # other states get update_study's own 409
        check_in_place(db, study, spec)
    return studies.update_study(db, study, spec, data_root)
