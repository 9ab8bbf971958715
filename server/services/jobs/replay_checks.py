"""Every saved episode re-simulated in the background and given a verdict.

Each replica runs a :class:`ReplayCheckRunner` over ``replay_checks`` (one row per episode,
:class:`~server.queue.claim_runner.ClaimRunner`: one replica claims each check, a dead
replica's checks are taken back). Each poll first queues what is due (:func:`queue_due`):
a check for every ended episode still ``pending`` (saved, rejected, canceled, abandoned or
failed: every episode whose log is final), and again for one whose check could not run
before (its log still held by a live worker, its runtime not installed) once its
``retry_at`` has come. A check replays the log in a process of the environment's runtime
at the lowest CPU priority, within one slot of the background budget and the limits
``STUDIO_REPLAY_CHECK_TIMEOUT_S`` and ``STUDIO_REPLAY_CHECK_MEMORY_MB``
(:mod:`server.runtime.replay_process`), and stores the verdict on the episode row; the log
is never written, except that a log recorded on the play path has its deferred observation
images drawn from its recorded states first, in the same slot
(:mod:`server.runtime.completion`): only then is the episode exportable. At start, and every
:data:`VERSIONS_EVERY_S`, episodes whose environment's package versions
(``replay_versions``) differ from what their runtime holds now go back to ``pending``
(:func:`recheck_versions`).
"""

from __future__ import annotations

import importlib.metadata
import logging
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import and_, exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.core.config import Settings
from server.models import Episode, EpisodeStatus, JobState, ReplayCheck, ReplayVerdict, utcnow
from server.queue.claim_runner import ClaimRunner, Handle, JobRefused, Outcome
from server.recording import deferred, journal, recovery
from server.recording.log_reader import read_log
from server.runtime import completion, replay_process, runtimes

log = logging.getLogger(__name__)

BATCH = 200  # checks queued per poll
BUSY_RETRY_S = 30.0  # a log still held by its worker: look again after this
UNAVAILABLE_RETRY_S = 600.0  # a runtime not installed (or broken): look again after this
VERSIONS_EVERY_S = 600.0
# a check row queued again, as if new
REQUEUED: dict[str, Any] = {
    "state": JobState.queued, "retry_at": None, "attempts": 0, "claimed_by": None,
    "cancel_requested": False, "message": None,
}  # fmt: skip
_ENDED = [s for s in EpisodeStatus if s != EpisodeStatus.recording]


def queue_due(db: Session, limit: int = BATCH) -> int:
    """Queue a check for each ended, pending episode without one, and again for each whose
    earlier check asked to be retried by now; how many."""
    now = utcnow()
    fresh = db.execute(
        select(Episode.id, Episode.study_id)
        .where(
            Episode.replay_verdict == ReplayVerdict.pending,
            Episode.status.in_(_ENDED),
            ~exists().where(ReplayCheck.episode_id == Episode.id),
        )
        .limit(limit)
    ).all()
    added = 0
    for episode_id, study_id in fresh:
        try:
            with db.begin_nested():
                db.add(ReplayCheck(episode_id=episode_id, study_id=study_id))
            added += 1
        except IntegrityError:  # another replica queued it first
            continue
    again = db.execute(
        update(ReplayCheck)
        .where(
            ReplayCheck.state.in_([JobState.succeeded, JobState.failed, JobState.canceled]),
            ReplayCheck.retry_at.is_not(None),
            ReplayCheck.retry_at <= now,
            exists().where(
                and_(
                    Episode.id == ReplayCheck.episode_id,
                    Episode.replay_verdict == ReplayVerdict.pending,
                )
            ),
        )
        .values(**REQUEUED)
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]
    db.commit()
    return added + (again or 0) + _give_up(db)


def _give_up(db: Session) -> int:
    """Pending episodes whose check failed for good (it killed its replica every time, or the
    runner broke) are ``not_replayable``, with the check's message."""
    failed = db.execute(
        select(Episode.id, ReplayCheck.message)
        .join(ReplayCheck, ReplayCheck.episode_id == Episode.id)
        .where(
            Episode.replay_verdict == ReplayVerdict.pending,
            ReplayCheck.state == JobState.failed,
            ReplayCheck.retry_at.is_(None),
        )
        .limit(BATCH)
    ).all()
    for episode_id, message in failed:
        detail = {"reason": "check_failed", "message": message or "the check failed"}
        db.execute(
            update(Episode)
            .where(Episode.id == episode_id)
            .values(
                replay_verdict=ReplayVerdict.not_replayable,
                replay_detail=detail,
                replay_checked_at=utcnow(),
            )
        )
    db.commit()
    return len(failed)


def check_again(db: Session, where: Any) -> int:
    """Put the episodes matching ``where`` back to pending and queue their checks now."""
    ids = list(db.scalars(select(Episode.id).where(where)))
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        db.execute(
            update(Episode)
            .where(Episode.id.in_(chunk))
            .values(replay_verdict=ReplayVerdict.pending, replay_step=None, replay_detail=None)
        )
        db.execute(
            update(ReplayCheck)
            .where(ReplayCheck.episode_id.in_(chunk), ReplayCheck.state != JobState.running)
            .values(**REQUEUED)
        )
    db.commit()
    return len(ids)


def _installed(runtime: str) -> dict[str, str]:
    """Distribution name (normalized) -> version, as the runtime holds them now."""
    if runtime == runtimes.APP:
        dists = importlib.metadata.distributions()
    else:
        venv = runtimes.RUNTIMES[runtime].venv
        dists = importlib.metadata.distributions(
            path=[str(p) for p in venv.glob("lib/python*/site-packages")]
        )
    return {_norm(d.metadata["Name"] or ""): d.version for d in dists}


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def current_versions(stored: str, cache: dict[str, dict[str, str]]) -> str | None:
    """``stored`` (``"<runtime>: name==version ..."``) as the runtime's packages are now;
    None when that runtime is not here (nothing to compare with)."""
    runtime, _, pins = stored.partition(": ")
    if runtime != runtimes.APP and runtime not in runtimes.RUNTIMES:
        return None
    if runtime not in cache:
        try:
            cache[runtime] = _installed(runtime)
        except OSError:
            return None
    now = []
    for pin in pins.split():
        name, sep, _version = pin.partition("==")
        if not sep:
            now.append(pin)
            continue
        version = cache[runtime].get(_norm(name))
        now.append(f"{name}=={version}" if version else f"{name} (not installed)")
    return f"{runtime}: {' '.join(now)}"


def recheck_versions(db: Session) -> int:
    """Episodes whose environment's packages changed since their check go back to pending
    (and are checked again); how many."""
    cache: dict[str, dict[str, str]] = {}
    stale: list[str] = []
    stored: Any = db.scalars(
        select(Episode.replay_versions).where(Episode.replay_versions.is_not(None)).distinct()
    )
    for versions in stored:
        now = current_versions(versions, cache)
        if now is not None and now != versions:
            stale.append(versions)
    changed = 0
    for versions in stale:
        log.info(
            "replay checks: %s changed (now %s); checking its episodes again",
            versions,
            current_versions(versions, cache),
        )
        changed += check_again(db, Episode.replay_versions == versions)
    return changed


def runtime_of_log(log_dir: Path) -> str:
    """The runtime of the environment a log was recorded in (the app's when the log does not
    say: the replay process then reports what is wrong with it)."""
    from server.runtime.catalog import runtime_of
    from server.study_spec import EnvironmentSpec

    try:
        meta, _ = read_log(str(log_dir), steps=False)
        spec = EnvironmentSpec.model_validate_json(str(meta.get("env_config", "")))
    except Exception:  # unreadable: the replay process says how
        return runtimes.APP
    return runtime_of(spec.source)


def _not_completed(result: dict[str, Any]) -> dict[str, Any]:
    """The verdict on an episode whose deferred images could not be drawn from its recorded
    states (it stays unexportable: its log keeps their placeholders)."""
    why = "its observation images could not be drawn from the recorded states"
    if result["result"] == "diverged":
        return {"verdict": ReplayVerdict.diverged, "difference": result["difference"],
                "message": f"{why}: {result['difference'].get('message')}"}  # fmt: skip
    return {"verdict": ReplayVerdict.not_replayable, "reason": result.get("reason"),
            "message": f"{why}: {result.get('message')}"}  # fmt: skip


class ReplayCheckRunner(ClaimRunner):
    """Claims replay checks and runs each in a process of the environment's runtime."""

    model = ReplayCheck
    kind = "replay-check"
    dead_message = "The server checking this episode stopped during the check three times."

    def __init__(self, settings: Settings, *args: Any, **kwargs: Any) -> None:
        super().__init__(settings.data_root, *args, **kwargs)
        self.settings = settings
        self._versions_at = 0.0
        self._allowed: Any = None

    def allowed(self) -> Any:
        if self._allowed is None:
            from server.services.studies.env_check import allowed_environments

            self._allowed = allowed_environments(self.settings)
        return self._allowed

    def reap(self) -> list[int]:
        ids = super().reap()
        with self.factory() as db:
            if time.monotonic() - self._versions_at > VERSIONS_EVERY_S:
                self._versions_at = time.monotonic()
                recheck_versions(db)
            queue_due(db)
        return ids

    def prepare(self, db: Session, job: ReplayCheck) -> Any:
        episode = db.get(Episode, job.episode_id)
        if episode is None:
            raise JobRefused("The episode was deleted.")
        return (episode.id, Path(episode.storage_path), episode.end_reason, episode.steps)

    def execute(self, handle: Handle) -> Outcome:
        episode_id, log_dir, end_reason, steps = handle.payload
        completion.settle(log_dir)  # a completion that died while its log took the place
        if journal.journal_path(log_dir).exists():
            recovery.recover(log_dir, wait_s=1.0)  # a dead worker's steps go back in first
            if journal.journal_path(log_dir).exists():
                return self._later(handle, BUSY_RETRY_S, "the episode's log is still open")
        if not log_dir.is_dir():
            return self._store(
                episode_id,
                {
                    "verdict": ReplayVerdict.not_replayable,
                    "reason": "no_log",
                    "message": "the episode has no log on disk",
                },
            )
        runtime = runtime_of_log(log_dir)
        if deferred.pending(log_dir):
            try:
                drawn = completion.complete_log(
                    log_dir,
                    runtime,
                    self.allowed(),
                    timeout_s=self.settings.replay_check_timeout_s,
                    memory_mb=self.settings.replay_check_memory_mb,
                    cancel=handle.cancel,
                    cpu_share=self.settings.replay_check_cpu_share,
                )
            except replay_process.Unavailable as exc:
                return self._later(
                    handle, UNAVAILABLE_RETRY_S, f"the {runtime} runtime cannot run here: {exc}"
                )
            if drawn is None:
                return ("canceled",)
            if drawn["result"] != "completed":
                return self._store(episode_id, _not_completed(drawn))
        try:
            result = replay_process.verify_log(
                log_dir,
                runtime,
                self.allowed(),
                end_reason=end_reason,
                timeout_s=self.settings.replay_check_timeout_s,
                memory_mb=self.settings.replay_check_memory_mb,
                cancel=handle.cancel,
                expected_steps=steps or None,
                cpu_share=self.settings.replay_check_cpu_share,
            )
        except replay_process.Unavailable as exc:
            return self._later(
                handle, UNAVAILABLE_RETRY_S, f"the {runtime} runtime cannot run here: {exc}"
            )
        if result is None:
            return ("canceled",)
        if result.get("versions"):
            result["versions"] = f"{runtime}: {result['versions']}"
        return self._store(episode_id, result)

    def _later(self, handle: Handle, after_s: float, why: str) -> Outcome:
        """The check could not run now: the episode stays pending, asked again later."""
        with self.factory() as db:
            db.execute(
                update(ReplayCheck)
                .where(ReplayCheck.id == handle.job_id)
                .values(retry_at=utcnow() + timedelta(seconds=after_s))
            )
            db.execute(
                update(Episode)
                .where(Episode.id == handle.payload[0])
                .values(replay_detail={"reason": "waiting", "message": why})
            )
            db.commit()
        return ("done",)

    def _store(self, episode_id: str, result: dict[str, Any]) -> Outcome:
        verdict = ReplayVerdict(result["verdict"])
        difference = result.get("difference")
        step = difference["step"] if difference else result.get("step")
        detail = {
            k: result[k]
            for k in ("reason", "message", "difference", "steps", "seconds")
            if result.get(k) is not None
        }
        if difference and "message" not in detail:
            detail["message"] = difference.get("message")
        with self.factory() as db:
            db.execute(  # only an episode still waiting for it: never over a newer verdict
                update(Episode)
                .where(Episode.id == episode_id, Episode.replay_verdict == ReplayVerdict.pending)
                .values(
                    replay_verdict=verdict,
                    replay_step=step,
                    replay_detail=detail,
                    replay_checked_at=utcnow(),
                    replay_versions=result.get("versions"),
                )
            )
            db.commit()
        return ("done",)
