"""A live session's database side (:class:`SessionStore`): each call in a thread with its
own database session; the reservation, progress and end of its episodes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from server.errors import Conflict
from server.models import EpisodeStatus
from server.player import protocol as p
from server.player import starts
from server.player._context import SessionContext
from server.player._phase import PlayError, refused
from server.player.episode_run import EpisodeRun
from server.player.views import episode_view, study_view
from server.recording.format import episode_dir
from server.services.crowd import episodes, leases, phone_codes, progress
from server.services.live import replicas
from server.study_spec import TaskSpec

log = logging.getLogger(__name__)
T = TypeVar("T")
CLOSED_ELSEWHERE = ("The server lost contact with this episode for too long and closed it; "
                    "please start a new one.")  # fmt: skip


class SessionStore:
    """What a session reads and writes in the database, off the event loop."""

    def __init__(self, session_id: str, context: SessionContext) -> None:
        self.session_id, self.context = session_id, context

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(db, ...)`` with its own database session in a thread."""

        def work() -> T:
            with self.context.db() as session:
                return fn(session, *args, **kwargs)

        return await asyncio.to_thread(work)

    async def participant_state(self, last_env: str | None = None) -> dict[str, Any] | None:
        """ParticipantState of a participant's session (None for a designer's test play)."""
        c = self.context
        pid = c.principal.participant_id
        if pid is None:
            return None
        return await self.call(progress.state_for, c.study_id, c.spec, pid, last_env)

    async def next_after(self, env_id: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The participant's state after an episode of ``env_id``, and what comes next (a
        designer may always play again)."""
        state = await self.participant_state(last_env=env_id)
        next_ = {"kind": "again", "env_id": env_id} if state is None else dict(state["next"])
        return state, next_

    async def hello(self, resumed: bool, session_not_found: bool, phase: str,
                    run: EpisodeRun | None, lanes: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        """The ``hello`` a connection gets as it attaches (docs/protocol.md)."""
        c = self.context
        return {"type": "hello", "protocol": p.PROTOCOL_VERSION, "session_id": self.session_id,
                "resumed": resumed, "session_not_found": session_not_found, "phase": phase,
                "study": study_view(c.study_id, c.spec, await self.completed_counts()),
                "episode": episode_view(run, c.spec),
                "participant": await self.participant_state(), **lanes}  # fmt: skip

    async def completed_counts(self) -> Any:
        """Completed episodes per environment, as the page shows them."""
        c = self.context
        return await self.call(episodes.completed_counts, c.study_id, c.principal)

    async def reserve(self, env_id: str, extra: bool,
                      task_id: str | None = None) -> tuple[Any, int, TaskSpec | None]:  # fmt: skip
        """The episode's row, seed and task (a participant's is a quota reservation)."""
        return await self.call(starts.reserve, self.context, self.session_id, env_id, extra,
                               task_id)  # fmt: skip

    async def start_failed(self, env_id: str, episode_id: str, exc: Exception) -> PlayError:
        """The environment did not start: log and store the details on its reserved episode
        (``failed``, which frees the reservation; the designer sees it); the error for the
        player: a designer's has the details, a participant's a plain message and the way
        forward."""
        c = self.context
        detail = f"{type(exc).__name__}: {exc}"
        log.warning("environment %s of study %s did not start: %s", env_id, c.study_id, detail)
        await self.call(episodes.record_start_failure, episode_id, detail[:4000])
        if c.principal.participant_id is None:  # a designer test-playing: the details
            return PlayError("env_failed", f"the environment did not start: {exc}")
        state = await self.participant_state(last_env=env_id)
        return refused("env_failed", progress.FAILED_MESSAGE, state)

    async def lease_lost(self) -> bool:
        """True when the participant's lease is no longer this session's (taken over; a
        designer's session holds none)."""
        pid = self.context.principal.participant_id
        if pid is None:
            return False
        lease = await self.call(leases.holder, pid)
        return lease is None or lease.session_id != self.session_id

    async def has_room(self) -> bool:
        """Room for one more worker: ``max_workers`` counts this process's; the total and
        per-study caps count every live replica's (their last heartbeat tick, plus ours)."""
        c, s = self.context, self.context.settings
        here = c.workers_in_use(None)
        if here >= s.max_workers:
            return False
        if not (s.max_workers_total or s.max_workers_per_study):
            return True
        mine = c.workers_in_use(c.study_id)
        total, study = await self.call(replicas.workers_elsewhere_both, s.replica_dead_after_s,
                                       s.replica_id, c.study_id)  # fmt: skip
        if s.max_workers_total and here + total >= s.max_workers_total:
            return False
        return not (s.max_workers_per_study and mine + study >= s.max_workers_per_study)

    async def end_session(self) -> None:
        """The session ended: its phone codes go, its row is stamped."""
        await self.call(phone_codes.drop_session, self.session_id)
        await self.call(episodes.end_session, self.session_id)

    async def progress(self, run: EpisodeRun) -> None:
        """Save the episode's progress (a pause, its end)."""
        await self.call(episodes.record_progress, run.id, run.steps, run.return_)

    async def finish(self, run: EpisodeRun, status: EpisodeStatus,
                     **ending: Any) -> Callable[[], Awaitable[dict[str, Any]]]:  # fmt: skip
        """Write the episode's final status (and the player's outcome); returns how to say
        so (``episode_saved``; ``episode_failed`` when another replica took the episode for
        dead meanwhile and closed it, docs/deploy.md), read once the session is idle."""
        try:
            await self.call(episodes.finish_episode, run.id, run.result(status, **ending))
        except Conflict:
            log.warning("episode %s was closed by another replica before it ended", run.id)

            async def closed() -> dict[str, Any]:
                _, next_ = await self.next_after(run.env_id)
                return {"type": "episode_failed", "episode_id": run.id, "code": "episode_closed",
                        "message": CLOSED_ELSEWHERE, "next": next_}  # fmt: skip

            return closed

        async def saved() -> dict[str, Any]:
            counts = await self.completed_counts()
            state, next_ = await self.next_after(run.env_id)
            return {"type": "episode_saved", "episode_id": run.id, "status": status,
                    "outcome": ending.get("player_outcome"), "steps": run.steps,
                    "return": run.return_, "completed": counts, "next": next_,
                    "participant": state}  # fmt: skip

        return saved

    async def failed_message(self, run: EpisodeRun, text: str) -> dict[str, Any]:
        """``episode_failed`` after its environment failed: a designer gets the details
        (``text``), a participant a plain message and the way forward (the details are the
        designer's, in the episode's ``error``)."""
        if self.context.principal.participant_id is None:
            return {"type": "episode_failed", "episode_id": run.id, "message": text}
        _, next_ = await self.next_after(run.env_id)
        return {"type": "episode_failed", "episode_id": run.id,
                "message": progress.STOPPED_MESSAGE, "next": next_}  # fmt: skip

    async def log_totals(self, run: EpisodeRun) -> tuple[int, float] | None:
        """After its worker died (and was reaped), what the episode's log holds (steps and
        return), with the steps of its journal put back (docs/runtime.md)."""
        c = self.context
        path = episode_dir(c.settings.data_root, c.study_id, run.id)
        return await asyncio.to_thread(episodes.log_totals, path)
