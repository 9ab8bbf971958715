"""A participant's progress through a crowd study: assignment, what comes next, done, codes.

Everything is computed from the episode rows, so a reload, a second server process or a
restart sees the same state. The quotas it reads are in :mod:`server.services.crowd.quotas`,
the codes and redirects in :mod:`server.services.crowd.codes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.errors import Conflict
from server.models import Episode, EpisodeStatus, Participant, Study, utcnow
from server.services.crowd import codes, participants, quotas
from server.services.feedback import judging
from server.services.review import counts
from server.study_spec import StudySpec

ENV_FAILED = "env_failed"  # end_reason of an episode whose environment did not start
FAILED_MESSAGE = "This game could not start. You can continue with another one."
STOPPED_MESSAGE = "This game stopped working. Your progress is kept; you can continue."


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
    judged: int = 0  # a feedback study: the participant's answered judgements

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


def _judging(db: Session, study: Study, spec: StudySpec, participant: Participant) -> Progress:
    """A feedback study's participant: done with their judgements or when the quota is met
    (then cut short: the full outcome). Running out of items is found by :func:`complete`."""
    assert spec.judging is not None
    judged = judging.answered_count(db, participant.id)
    full = quotas.full_now(db, study, spec)
    enough = judged >= spec.judging.judgements_per_participant
    done = enough or bool(full)
    return Progress({}, full, 0.0, 0, True, done, cut_short=done and not enough, judged=judged)


def progress(db: Session, study: Study, spec: StudySpec, participant: Participant) -> Progress:
    """Per environment: completed / required / full / failed; requirements; done."""
    if spec.judging is not None:
        return _judging(db, study, spec, participant)
    totals = quotas.reserved_totals(db, study.id)
    full = quotas.full_envs(spec, totals)
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
    quotas.lock_study(db, study.id)
    db.refresh(participant)  # the same participant's other join may have chosen meanwhile
    current = participant.assigned_env
    if current in prog.envs and prog.playable(current):
        db.commit()
        return current
    candidates = [e for e in spec.environments if prog.playable(e.id)]
    choice: str | None = None
    if candidates:
        totals = quotas.reserved_totals(db, study.id)
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
    """What comes after an episode: ``again`` (same env), ``next_env``, ``done``, or in a
    feedback study ``judge`` (the next item)."""
    if prog.done:
        return {"kind": "done", "env_id": None}
    if spec.judging is not None:
        return {"kind": "judge", "env_id": None}
    if spec.crowd.assignment == "balanced":
        if assigned is not None and assigned == last_env:
            return {"kind": "again", "env_id": assigned}
        return {"kind": "next_env", "env_id": assigned}
    if last_env is not None and last_env in prog.envs and prog.playable(last_env):
        return {"kind": "again", "env_id": last_env}
    following = [e.id for e in spec.environments if prog.playable(e.id)]
    return {"kind": "next_env", "env_id": following[0] if following else None}


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
        "screenout_reason": participant.screenout_reason if screened else None,
        "screenout": codes.screenout(crowd, participant) if screened and reveal else None,
        "done": prog.done or completed or full,
        "completed": completed,
        "completion": codes.completion(crowd, participant) if completed and reveal else None,
        "full": full,  # the study filled up before they finished: the full page, its code
        "full_outcome": codes.full_outcome(crowd, participant) if full and reveal else None,
        # their code was shown in another browser (the one holding the key)
        "code_elsewhere": (completed or full or screened) and not reveal,
        "outcome": participants.outcome(participant),
        "study_state": quotas.study_state(study, spec, prog.full, participant.is_test),  # one count
        "test": participant.is_test,  # a designer's preview: every page says TEST
        "ends_full": prog.cut_short,  # finishing now gives the full outcome
        "progress": envs,
        "assigned_env": assigned,
        "next": next_step(spec, prog, assigned, last_env),
        "play_time_s": round(prog.play_time_s, 3),
        "judging": None
        if spec.judging is None
        else {
            "answered": prog.judged,
            "required": spec.judging.judgements_per_participant,
        },
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
        if not prog.done and spec.judging is not None:
            prog = _nothing_left(db, study, spec, participant, prog)
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


def _nothing_left(db: Session, study: Study, spec: StudySpec, participant: Participant,
                  prog: Progress) -> Progress:  # fmt: skip
    """A judge with judgements still to make is done when no item is left for them (cut
    short: the full outcome); otherwise 409 saying how many are left."""
    assert spec.judging is not None
    if judging.draw(db, study, spec.judging, participant) is None:
        prog.done = prog.cut_short = True
        return prog
    left = spec.judging.judgements_per_participant - prog.judged
    raise Conflict(f"The study is not finished yet: {left} more to judge.")


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
