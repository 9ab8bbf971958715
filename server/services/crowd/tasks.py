"""An episode's task: which of its environment's tasks it draws (``task_order``), and the
seed that goes with it.

``balanced`` takes the task with the fewest episodes in the study so far (recording and
ended, failed starts and test plays aside), then the one the player has played least, then
the listed order; the choice is made under the study's lock, as environment assignment is, so
a burst of starts spreads over the tasks. ``fixed`` gives each player the tasks in turn;
``choice`` takes the one the player picked (balanced when they picked none).
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.errors import Invalid
from server.models import Episode
from server.principal import Principal
from server.services.crowd import quotas
from server.services.crowd.episodes import player_filter
from server.services.crowd.progress import ENV_FAILED
from server.study_spec import EnvironmentSpec, TaskSpec


def _counts(db: Session, study_id: int, env: EnvironmentSpec,
            player: object | None) -> dict[str, int]:  # fmt: skip
    query = (
        select(Episode.task_key, func.count())
        .where(Episode.study_id == study_id, Episode.env_key == env.id,
               Episode.task_key.is_not(None),
               (Episode.end_reason.is_(None)) | (Episode.end_reason != ENV_FAILED))
        .group_by(Episode.task_key)
    )  # fmt: skip
    if player is not None:
        query = query.where(player)  # type: ignore[arg-type]
    else:
        query = query.where(Episode.is_test.is_(False))
    return {str(key): int(n) for key, n in db.execute(query).all()}


def draw(db: Session, study_id: int, env: EnvironmentSpec, principal: Principal,
         chosen: str | None = None) -> TaskSpec | None:  # fmt: skip
    """The task of the player's next episode of ``env`` (None: it lists none). A ``chosen``
    task must be one of the environment's (:class:`Invalid` naming it otherwise); it is taken
    only where the environment lets players choose."""
    if not env.tasks:
        return None
    if chosen is not None:
        try:
            task = env.task(chosen)
        except KeyError:
            raise Invalid(f"{env.name} has no task {chosen!r}.", code="unknown_task") from None
        if env.task_order == "choice":
            return task
    own = _counts(db, study_id, env, player_filter(principal))
    if env.task_order == "fixed":
        return env.tasks[sum(own.values()) % len(env.tasks)]
    quotas.lock_study(db, study_id)  # held until the episode's row is committed
    study = _counts(db, study_id, env, None)
    ranked = min(enumerate(env.tasks),
                 key=lambda pt: (study.get(pt[1].id, 0), own.get(pt[1].id, 0), pt[0]))  # fmt: skip
    return ranked[1]
