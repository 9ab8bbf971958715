"""Starting an episode: which environment a participant may start now, and its reservation
(the seed and the episode row, a quota place taken in the database)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from server.errors import Invalid
from server.player._context import SessionContext
from server.player._phase import PlayError, refused
from server.services.crowd import episodes, progress, quotas, tasks
from server.services.crowd.progress import FAILED_MESSAGE
from server.study_spec import StudySpec, TaskSpec


def choose_env(spec: StudySpec, state: dict[str, Any] | None,
               env_id: str | None) -> tuple[str, bool]:  # fmt: skip
    """The environment to start (and whether the episode is an extra one, past the quota):
    ``env_id``, or for a participant (``state``: theirs) :func:`start_check`'s choice."""
    extra = False
    if state is not None:
        env_id, extra = start_check(spec, state, env_id)
    if env_id is None:
        raise PlayError("invalid", "start: env_id: name the environment to play")
    try:
        return spec.environment(env_id).id, extra
    except KeyError:
        raise PlayError("unknown_env", f"the study has no environment {env_id!r}") from None


def start_check(spec: StudySpec, state: dict[str, Any], env_id: str | None) -> tuple[str, bool]:
    """The environment a participant may start now (and whether it is past their quota
    because a requirement is still unmet), or the PlayError saying why not."""
    if state["screened_out"]:
        raise refused("screened_out", "you did not consent to this study", state)
    if state["outcome"] in ("completed", "full"):
        raise refused("study_done", "you have finished this study", state)
    if state["study_state"] in ("paused", "closed"):  # changed since the socket opened
        words = {"paused": "the study is paused for a moment; please try again later",
                 "closed": "the study has ended and takes no more episodes"}  # fmt: skip
        kind = state["study_state"]
        raise PlayError(f"study_{kind}", words[kind],
                        {"next": {"kind": kind, "env_id": None}, "participant": state})  # fmt: skip
    if state["consent_required"] and not state["consented"]:
        raise refused("consent_required", "please accept the consent form first", state)
    assigned = state["assigned_env"]
    if spec.crowd.assignment == "balanced":
        if env_id is not None and env_id != assigned:
            raise refused("assigned_elsewhere", "another environment is assigned to you", state)
        if assigned is None:
            raise refused("quota_reached", "there is nothing left for you to play", state)
        env_id = assigned
    if env_id is None or env_id not in state["progress"]:
        raise PlayError("unknown_env", f"the study has no environment {env_id!r}")
    info = state["progress"][env_id]
    name = spec.environment(env_id).name
    if info["status"] == "finished":
        raise refused("quota_reached", f"you have played all episodes of {name}", state)
    if info["status"] == "full":
        raise refused("env_full", f"{name} has all the episodes it needs", state)
    if info["status"] == "failed":
        raise refused("env_failed", FAILED_MESSAGE, state)
    return env_id, info["completed"] >= info["required"]


def reserve(db: Session, context: SessionContext, session_id: str, env_id: str, extra: bool,
            task_id: str | None = None) -> tuple[Any, int, TaskSpec | None]:  # fmt: skip
    """The episode row, its seed and task, in one database session (a burst of starts waits
    on the thread pool: one hop each); a refusal comes with the participant's state."""
    c = context
    env = c.spec.environment(env_id)
    try:
        task = tasks.draw(db, c.study_id, env, c.principal, task_id)
    except Invalid as exc:
        db.rollback()
        raise PlayError("unknown_task", exc.message) from None
    seed = episodes.next_seed(db, c.study_id, env, c.principal, task)
    try:
        row = episodes.create_episode(
            db, study_id=c.study_id, env_key=env_id, session_id=session_id,
            principal=c.principal, seed=seed, data_root=c.settings.data_root,
            spec=c.spec, extra=extra, replica_id=c.settings.replica_id, task=task,
        )  # fmt: skip
    except quotas.QuotaError as exc:
        pid = c.principal.participant_id
        state = progress.state_for(db, c.study_id, c.spec, pid, env_id) if pid else None
        raise refused(exc.code or "quota_reached", exc.message, state) from None
    return row, seed, task
