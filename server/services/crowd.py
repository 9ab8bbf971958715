"""A participant's progress through a crowd study: quotas, assignment, done, codes, redirects.

Everything is computed from the episode rows, so a reload, a second server process or a
restart sees the same state. Quotas count episodes in ``recording`` as reserved, and
:func:`reserve` takes a lock before counting (see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from server.errors import Conflict
from server.models import (
    Episode,
    EpisodeStatus,
    Participant,
    Platform,
    Study,
    StudyEnvironment,
    StudyState,
    utcnow,
)
from server.services import participants
from server.services.review import counts
from server.study_spec import CrowdSettings, StudySpec

RESERVED = (EpisodeStatus.completed, EpisodeStatus.recording)
ENV_FAILED = "env_failed"  # end_reason of an episode whose environment did not start
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"
FAILED_MESSAGE = "This game could not start. You can continue with another one."
STOPPED_MESSAGE = "This game stopped working. Your progress is kept; you can continue."


class QuotaError(Conflict):
    """An episode cannot start: ``code`` is ``quota_reached`` or ``env_full``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


# -- counts --------------------------------------------------------------------------------
def reserved_totals(db: Session, study_id: int) -> dict[str, int]:
    """Participants' completed plus recording episodes per environment (designers' test
    plays, ``is_test``, do not fill a study)."""
    rows = db.execute(
        select(Episode.env_key, func.count())
        .where(Episode.study_id == study_id, Episode.status.in_(RESERVED),
               Episode.is_test.is_(False))
        .group_by(Episode.env_key)
    ).all()  # fmt: skip
    return {key: int(n) for key, n in rows}


def _own_counts(db: Session, participant_id: int) -> dict[str, dict[str, int]]:
    rows = db.execute(
        select(Episode.env_key, Episode.status, Episode.end_reason, func.count())
        .where(Episode.participant_id == participant_id)
        .group_by(Episode.env_key, Episode.status, Episode.end_reason)
    ).all()
    out: dict[str, dict[str, int]] = {}
    for key, status, reason, n in rows:
        counts = out.setdefault(key, {})
        name = ENV_FAILED if reason == ENV_FAILED else str(status)
        counts[name] = counts.get(name, 0) + int(n)
    return out


def play_time_s(db: Session, participant_id: int) -> float:
    """Active play time: the durations (from ``go``) of completed episodes."""
    total = db.scalar(
        select(func.coalesce(func.sum(Episode.duration_s), 0.0)).where(
            Episode.participant_id == participant_id, Episode.status == EpisodeStatus.completed
        )
    )
    return float(total or 0.0)


def full_envs(spec: StudySpec, totals: dict[str, int]) -> set[str]:
    """Environments whose ``episodes_total`` is reached (reservations included)."""
    return {
        e.id for e in spec.environments
        if e.episodes_total is not None and totals.get(e.id, 0) >= e.episodes_total
    }  # fmt: skip


def availability(db: Session, study: Study, spec: StudySpec) -> str:
    """``active``, ``paused``, ``closed`` (draft reads as closed) or ``full``."""
    active = study.state == StudyState.active  # only an active study's quotas are counted
    full = full_envs(spec, reserved_totals(db, study.id)) if active else set()
    return study_state(study, spec, full)


def study_state(study: Study, spec: StudySpec, full: set[str], preview: bool = False) -> str:
    """:func:`availability`, given the environments that are ``full`` now. A ``preview`` (a
    test participant) sees the study as if it were active, whatever its state."""
    if study.state == StudyState.paused and not preview:
        return "paused"
    if study.state != StudyState.active and not preview:
        return "closed"
    return "full" if len(full) == len(spec.environments) else "active"


# -- quotas, atomically ----------------------------------------------------------------------
def lock_study(db: Session, study_id: int) -> None:
    """Serialize with the study's other assignments until commit: a no-op UPDATE of its row
    (a row lock on PostgreSQL, the write lock on SQLite; ``updated_at`` is kept as it is)."""
    db.execute(
        update(Study)
        .where(Study.id == study_id)
        .values(updated_at=Study.updated_at)
        .execution_options(synchronize_session=False)
    )


def reserve(db: Session, study_id: int, env_key: str, participant_id: int | None,
            spec: StudySpec, extra: bool = False) -> StudyEnvironment:  # fmt: skip
    """Lock the environment and check its quotas; the caller inserts the episode and commits.

    The no-op UPDATE is the transaction's first write: on PostgreSQL it locks the
    environment's row until commit, on SQLite it takes the database's write lock. Counting
    after it, the insert and the commit are thus serialized per environment, so concurrent
    starts never push it past ``episodes_total``. ``extra``: the per-participant quota is
    lifted (the participant still has requirements to meet).
    """
    row = db.scalar(
        select(StudyEnvironment).where(
            StudyEnvironment.study_id == study_id, StudyEnvironment.env_key == env_key
        )
    )
    if row is None:
        raise Conflict(f"The study has no environment {env_key!r}.")
    db.execute(
        update(StudyEnvironment)
        .where(StudyEnvironment.id == row.id)
        .values(position=StudyEnvironment.position)
        .execution_options(synchronize_session=False)
    )
    if participant_id is None:
        return row
    env = spec.environment(env_key)
    if env.episodes_total is not None:
        total = db.scalar(
            select(func.count()).where(
                Episode.study_env_id == row.id, Episode.status.in_(RESERVED),
                Episode.is_test.is_(False),
            )
        )  # fmt: skip
        if int(total or 0) >= env.episodes_total:
            raise QuotaError("env_full", f"{env.name} has all the episodes it needs.")
    if not extra:
        mine = db.scalar(
            select(func.count()).where(
                Episode.study_env_id == row.id, Episode.status.in_(RESERVED),
                Episode.participant_id == participant_id,
            )
        )  # fmt: skip
        if int(mine or 0) >= env.episodes_per_participant:
            raise QuotaError("quota_reached", f"You have played all episodes of {env.name}.")
    return row


# -- the participant's state -----------------------------------------------------------------
@dataclass
class Progress:
    """Where one participant stands (see :func:`progress`)."""

    envs: dict[str, dict[str, Any]]
    full: set[str]
    play_time_s: float
    episodes: int  # completed, all environments
    requirements_met: bool
    done: bool
    # done because games filled up before the participant finished them (and the study's
    # requirements, when it sets any, are not met): the "full" outcome, not completion
    cut_short: bool = False

    def playable(self, env_id: str) -> bool:
        """May the participant start an episode of ``env_id`` now?"""
        info = self.envs[env_id]
        if info["full"] or info["failed"]:
            return False
        return not info["finished"] or self.extra

    @property
    def extra(self) -> bool:
        """Every quota is played but a requirement is not met: more episodes are allowed."""
        return not self.done and not self.requirements_met

    def status(self, env_id: str) -> str:
        """Why an environment is (not) offered: ``open``, ``finished``, ``full``, ``failed``."""
        info = self.envs[env_id]
        if info["failed"]:
            return "failed"
        if info["full"]:
            return "full"
        return "finished" if info["finished"] and not self.extra else "open"


def progress(db: Session, study: Study, spec: StudySpec, participant: Participant) -> Progress:
    """Per environment: completed / required / full / failed; requirements; done."""
    totals = reserved_totals(db, study.id)
    full = full_envs(spec, totals)
    own = _own_counts(db, participant.id)
    envs: dict[str, dict[str, Any]] = {}
    for env in spec.environments:
        counts = own.get(env.id, {})
        completed = counts.get(EpisodeStatus.completed, 0)
        envs[env.id] = {
            "completed": completed,
            "required": env.episodes_per_participant,
            "finished": completed >= env.episodes_per_participant,
            "full": env.id in full,
            "failed": counts.get(ENV_FAILED, 0) > 0 and completed == 0,
        }
    req = spec.crowd.requirements
    played = play_time_s(db, participant.id)
    episodes = sum(e["completed"] for e in envs.values())
    met = episodes >= req.min_episodes and played >= req.min_play_time_s
    quotas_done = all(e["finished"] or e["full"] or e["failed"] for e in envs.values())
    # Quotas played but a requirement unmet: the participant may play more; when nothing at
    # all can be played any more (full or failed), they are done anyway (no dead end).
    nothing_left = quotas_done and all(e["full"] or e["failed"] for e in envs.values())
    done = quotas_done and (met or nothing_left)
    required = req.min_episodes > 0 or req.min_play_time_s > 0
    cut_short = (done and any(e["full"] and not e["finished"] for e in envs.values())
                 and not (required and met))  # fmt: skip
    return Progress(envs, full, played, episodes, met, done, cut_short)


def assign(db: Session, study: Study, spec: StudySpec, participant: Participant,
           prog: Progress) -> str | None:  # fmt: skip
    """Balanced assignment: keep a playable assigned environment, else pick the one furthest
    from its ``episodes_total`` (fewest episodes and assigned participants first)."""
    if spec.crowd.assignment != "balanced":
        return None
    current = participant.assigned_env
    if current in prog.envs and prog.playable(current):
        return current
    if not any(prog.playable(e.id) for e in spec.environments):
        if current is not None:  # nothing left to choose from: no lock to wait for
            participant.assigned_env = None
            db.commit()
        return None
    # Choosing reads every participant's assignment: serialize the choices of one study (a
    # burst of joins would otherwise all read the same counts and pick the same environment).
    lock_study(db, study.id)
    db.refresh(participant)  # the same participant's other join may have chosen meanwhile
    current = participant.assigned_env
    if current in prog.envs and prog.playable(current):
        db.commit()
        return current
    candidates = [e for e in spec.environments if prog.playable(e.id)]
    choice: str | None = None
    if candidates:
        totals = reserved_totals(db, study.id)
        assigned = dict(
            db.execute(
                select(Participant.assigned_env, func.count())
                .where(Participant.study_id == study.id, Participant.assigned_env.is_not(None),
                       Participant.id != participant.id, counts.REAL_PARTICIPANT)
                .group_by(Participant.assigned_env)
            ).all()
        )  # fmt: skip

        def load(env_id: str) -> int:
            return totals.get(env_id, 0) + int(assigned.get(env_id, 0))

        def key(pos_env: tuple[int, Any]) -> tuple[float, int, int]:
            pos, env = pos_env
            room = float("inf") if env.episodes_total is None else env.episodes_total - load(env.id)
            return (-room, load(env.id), pos)

        choice = min(enumerate(candidates), key=key)[1].id
    participant.assigned_env = choice
    db.commit()  # releases the lock
    return choice


def next_step(spec: StudySpec, prog: Progress, assigned: str | None,
              last_env: str | None) -> dict[str, Any]:  # fmt: skip
    """What comes after an episode: ``again`` (same env), ``next_env`` or ``done``."""
    if prog.done:
        return {"kind": "done", "env_id": None}
    if spec.crowd.assignment == "balanced":
        if assigned is not None and assigned == last_env:
            return {"kind": "again", "env_id": assigned}
        return {"kind": "next_env", "env_id": assigned}
    if last_env is not None and last_env in prog.envs and prog.playable(last_env):
        return {"kind": "again", "env_id": last_env}
    following = [e.id for e in spec.environments if prog.playable(e.id)]
    return {"kind": "next_env", "env_id": following[0] if following else None}


# -- codes and redirects ---------------------------------------------------------------------
def _fill(url: str, code: str) -> str:
    return url.replace("{code}", quote(code, safe=""))


def _outcome(code: str, url: str, participant: Participant, submit: bool) -> dict[str, Any]:
    """A code and its redirect. An MTurk worker's HIT is submitted (``submit``) whatever URL
    the study names, since MTurk pays only a submitted assignment; then the study's URL; then
    Prolific's completion page with the code; else none (the page shows the code)."""
    redirect: dict[str, Any] | None = None
    if submit and participant.platform == Platform.mturk and participant.submit_to:
        target = participant.submit_to.rstrip("/") + "/mturk/externalSubmit"
        fields = {"assignmentId": participant.platform_session_id or "", "completion_code": code}
        redirect = {"method": "POST", "url": target, "fields": fields}
    elif url:
        redirect = {"method": "GET", "url": _fill(url, code), "fields": {}}
    elif participant.platform == Platform.prolific and code:
        target = f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code})}"
        redirect = {"method": "GET", "url": target, "fields": {}}
    return {"code": code, "redirect": redirect}


def completion(crowd: CrowdSettings, participant: Participant) -> dict[str, Any]:
    """The completion code and where to send the participant with it."""
    return _outcome(crowd.completion_code, crowd.completion_url, participant, submit=True)


def full_outcome(crowd: CrowdSettings, participant: Participant) -> dict[str, Any]:
    """The study filled up before the participant finished: the designer's ``full_code`` and
    ``full_url`` (Prolific: a screen-out or no-code return; MTurk: the HIT is submitted with
    this code, for the requester to approve or not)."""
    return _outcome(crowd.full_code, crowd.full_url, participant, submit=True)


def screenout(crowd: CrowdSettings, participant: Participant) -> dict[str, Any]:
    """The screen-out code and redirect (consent declined; an MTurk worker returns the HIT)."""
    return _outcome(crowd.screenout_code, crowd.screenout_url, participant, submit=False)


def state(db: Session, study: Study, spec: StudySpec, participant: Participant,
          last_env: str | None = None, reveal: bool = False) -> dict[str, Any]:  # fmt: skip
    """ParticipantState (docs/protocol.md): what the player page shows next. Codes only with
    ``reveal`` (the caller holds the participant's browser key, or earned them just now)."""
    crowd = spec.crowd
    prog = progress(db, study, spec, participant)
    assigned = assign(db, study, spec, participant, prog)
    completed = participant.completed_at is not None
    full = participant.full_at is not None
    screened = participant.screened_out_at is not None
    envs = {
        key: {"completed": v["completed"], "required": v["required"], "full": v["full"],
              "failed": v["failed"], "status": prog.status(key)}
        for key, v in prog.envs.items()
    }  # fmt: skip
    return {
        "external_id": participant.external_id,
        "platform": participant.platform,
        "consent_required": bool(crowd.consent),
        "consented": participant.consented_at is not None,
        "screened_out": screened,
        "screenout": screenout(crowd, participant) if screened and reveal else None,
        "done": prog.done or completed or full,
        "completed": completed,
        "completion": completion(crowd, participant) if completed and reveal else None,
        "full": full,  # the study filled up before they finished: the full page, its code
        "full_outcome": full_outcome(crowd, participant) if full and reveal else None,
        # their code was shown in another browser (the one holding the key)
        "code_elsewhere": (completed or full or screened) and not reveal,
        "outcome": participants.outcome(participant),
        "study_state": study_state(study, spec, prog.full, participant.is_test),  # one count
        "test": participant.is_test,  # a designer's preview: every page says TEST
        "ends_full": prog.cut_short,  # finishing now gives the full outcome
        "progress": envs,
        "assigned_env": assigned,
        "next": next_step(spec, prog, assigned, last_env),
        "play_time_s": round(prog.play_time_s, 3),
        "requirements": {
            "min_episodes": crowd.requirements.min_episodes,
            "min_play_time_s": crowd.requirements.min_play_time_s,
            "episodes": prog.episodes,
            "met": prog.requirements_met,
        },
    }


def complete(db: Session, study: Study, spec: StudySpec, participant: Participant) -> bool:
    """Stamp completion (once) and that the code was shown; Conflict saying what is missing.
    True when this call finished the study (the caller earned the code)."""
    earned = False
    if participant.completed_at is None and participant.full_at is None:
        if participant.screened_out_at is not None:
            raise Conflict("You did not consent, so the study cannot be completed.")
        if spec.crowd.consent and participant.consented_at is None:
            raise Conflict("Please read and accept the consent form first.")
        prog = progress(db, study, spec, participant)
        if not prog.done:
            missing = [f"{spec.environment(k).name}: {v['completed']} of {v['required']}"
                       for k, v in prog.envs.items() if prog.playable(k)]  # fmt: skip
            raise Conflict(
                "The study is not finished yet. Still to play: " + "; ".join(missing) + "."
            )
        if prog.cut_short:
            participant.full_at = utcnow()
        else:
            participant.completed_at = utcnow()
        earned = True
    participant.completion_shown_at = participant.completion_shown_at or utcnow()
    db.commit()
    return earned


def state_for(db: Session, study_id: int, spec: StudySpec, participant_id: int,
              last_env: str | None = None) -> dict[str, Any]:  # fmt: skip
    """:func:`state` by ids (the player's sessions hold ids, not rows)."""
    study = db.get(Study, study_id)
    participant = db.get(Participant, participant_id)
    if study is None or participant is None:
        raise Conflict("The participant or the study is gone.")
    participant.last_seen_at = utcnow()
    db.commit()
    return state(db, study, spec, participant, last_env)
