"""How a play session's episode ends: saved, canceled, abandoned or failed (the worker died),
and the worker closed (:class:`EpisodeEndings`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from server.errors import Conflict
from server.models import EpisodeStatus
from server.player._phase import ACTIVE, Phase
from server.player._run import EpisodeRun
from server.player._session_base import SessionBase
from server.recording.format import episode_dir
from server.runtime import RemoteError, WorkerError
from server.services.crowd import episodes, progress

log = logging.getLogger(__name__)
CLOSED_ELSEWHERE = ("The server lost contact with this episode for too long and closed it; "
                    "please start a new one.")  # fmt: skip


class EpisodeEndings(SessionBase):
    """The end of a session's episode, and of its worker."""

    async def finish(self, run: EpisodeRun, status: EpisodeStatus, error: str | None = None,
                      end_reason: str | None = None, player_outcome: str | None = None,
                      ) -> None:  # fmt: skip
        """Write the episode's final status (and the player's outcome) and tell the player."""
        result = episodes.EpisodeResult(
            status=status, steps=run.steps, total_reward=run.return_,
            end_reason=end_reason or run.end_reason, error=error,
            latencies_ms=run.latencies_ms, frames_dropped=run.frames_dropped, ended_at=run.ended_at,
            inputs=run.inputs,
            player_outcome=player_outcome, policy_error=run.policy_error,
        )  # fmt: skip
        try:
            await self.db(episodes.finish_episode, run.id, result)
        except Conflict:  # another replica took it for dead meanwhile (docs/deploy.md)
            log.warning("episode %s was closed by another replica before it ended", run.id)
            self.run, self.phase = None, Phase.idle
            self.disarm_pause_timer()
            state = await self.participant_state(last_env=run.env_id)
            next_ = self._next(state, run.env_id)
            self.send({"type": "episode_failed", "episode_id": run.id, "code": "episode_closed",
                       "message": CLOSED_ELSEWHERE, "next": next_})  # fmt: skip
            return
        self.run = None
        self.phase = Phase.idle
        self.disarm_pause_timer()
        counts = await self.db(episodes.completed_counts, self.study_id, self.principal)
        state = await self.participant_state(last_env=run.env_id)
        self.send({"type": "episode_saved", "episode_id": run.id, "status": status,
                   "outcome": player_outcome, "steps": run.steps, "return": run.return_,
                   "completed": counts, "next": self._next(state, run.env_id),
                   "participant": state})  # fmt: skip

    def _next(self, state: dict[str, Any] | None, env_id: str) -> dict[str, Any]:
        """What comes next; a designer may always play again."""
        if state is None:
            return {"kind": "again", "env_id": env_id}
        return dict(state["next"])

    async def stop(self, status: EpisodeStatus, reason: str) -> None:
        """End the running episode early (cancel, abandon): finalize its log, then the row."""
        run = self.run
        assert run is not None
        if self.worker is not None:
            try:
                summary = await self.worker.end_episode(reason, run.id)
            except WorkerError as exc:  # the worker died: the row counts what its log holds
                log.warning("end_episode failed: %s", exc)
                await self._close_worker()
                await self._count_log(run)
            else:
                # the log's count: async steps (even the last one, when the episode ended on
                # its own as the player canceled) may still be on their way to us
                if summary:
                    run.step = max(run.step, int(summary["num_steps"]) - 1)
                    run.return_ = float(summary["total_reward"])
        await self.finish(run, status, end_reason=reason)

    async def _abandon(self, reason: str) -> None:
        if self.run is not None and self.phase in (*ACTIVE, Phase.ended):
            await self.stop(EpisodeStatus.abandoned, reason)

    async def fail(self, exc: BaseException) -> None:
        """The environment crashed or its worker died: the episode is ``failed``."""
        message = exc.message if isinstance(exc, RemoteError) else str(exc)
        kind = exc.kind if isinstance(exc, RemoteError) else type(exc).__name__
        log.warning("environment failure in session %s: %s: %s", self.id, kind, message)
        text = f"The environment failed ({kind}: {message[:300]})"
        await self._close_worker()
        run = self.run
        if run is not None and self.phase != Phase.ended:
            await self._count_log(run)
            await self.finish(run, EpisodeStatus.failed, error=text, end_reason="failed")
            if self.principal.participant_id is None:  # a designer: the details
                self.send({"type": "episode_failed", "episode_id": run.id, "message": text})
            else:  # the details are the designer's (episode.error); never the participant's
                state = await self.participant_state(last_env=run.env_id)
                self.send({"type": "episode_failed", "episode_id": run.id,
                           "message": progress.STOPPED_MESSAGE,
                           "next": self._next(state, run.env_id)})  # fmt: skip
        self.phase = Phase.idle if self.phase != Phase.closed else Phase.closed

    async def _count_log(self, run: EpisodeRun) -> None:
        """After its worker died (and was reaped), an episode counts what its log holds, with
        the steps of its journal put back (docs/runtime.md)."""
        path = episode_dir(self.settings.data_root, self.study_id, run.id)
        totals = await asyncio.to_thread(episodes.log_totals, path)
        if totals is not None:
            run.step, run.return_ = totals[0] - 1, totals[1]

    async def _close_worker(self) -> None:
        worker, self.worker, self.env_id = self.worker, None, None
        if worker is not None:
            await worker.close(timeout=self.settings.worker_timeout_s)
