"""A play session's state and the helpers every part of it uses (:class:`SessionBase`)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from server.core.config import Settings
from server.player import protocol as p
from server.player._phase import Phase
from server.player._run import EpisodeRun
from server.player.adaptive import QualityController
from server.player.outbox import Outbox, next_turn
from server.player.phone import PhoneLink
from server.player.views import env_ready
from server.principal import Principal
from server.runtime import EnvWorker
from server.services.crowd import progress
from server.study_spec import StudySpec

T = TypeVar("T")


class SessionBase:
    """What a play session holds, and its helpers; :class:`server.player.session.LiveSession`
    adds the connection and the episode's start, :class:`server.player.endings.EpisodeEndings`
    its end."""

    def __init__(self, *, session_id: str, study_id: int, spec: StudySpec,
                 principal: Principal, settings: Settings, db: sessionmaker[Session],
                 on_closed: Callable[[Any], None],
                 workers_in_use: Callable[[int | None], int]) -> None:  # fmt: skip
        self.id = session_id
        self.study_id = study_id
        self.spec = spec
        self.principal = principal
        self.settings = settings
        self._sessions = db
        self._on_closed = on_closed
        self._workers_in_use = workers_in_use
        self.phase = Phase.idle
        self.lock = asyncio.Lock()
        self.outbox: Outbox | None = None
        # lanes: more sockets of the same page carrying frames in turn (settings.stream_lanes)
        self.lane_key = secrets.token_urlsafe(18)
        self.lanes: list[Outbox] = []
        self.lane_turn = 0  # whose turn the next frame is, among frame_outboxes()
        self.last_input_seq = 0  # inputs come once per socket they were sent on: the first counts
        self.worker: EnvWorker | None = None
        self.env_id: str | None = None
        self.run: EpisodeRun | None = None
        self.episodes_started = 0
        self.speed = 1.0
        self.quality: str | None = None  # what the player chose
        self.adaptive: QualityController | None = None  # the adaptive stream's, if on
        self.camera: str | None = None
        self.lost_connection = False
        self.phone = PhoneLink(session_id, principal.participant_id)
        self.desktop_raw: dict[str, Any] = {}  # the player page's latest input
        self._pause_timer: asyncio.Task[None] | None = None
        self._pause_deadline: float | None = None  # the event loop's time the pause ends at
        self._grace_timer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lanes (settings.stream_lanes, docs/protocol.md "Lanes") ----------------------------
    def _lanes_offer(self) -> dict[str, Any]:
        count = self.settings.stream_lanes
        return {"lanes": {"key": self.lane_key, "count": count}} if count else {}

    def attach_lane(self, outbox: Outbox) -> bool:
        """One more socket of the page carries frames in turn; False when none is wanted."""
        if self.outbox is None or len(self.lanes) >= self.settings.stream_lanes:
            return False
        self.lanes.append(outbox)
        return True

    def detach_lane(self, outbox: Outbox) -> None:
        if outbox in self.lanes:
            self.lanes.remove(outbox)

    def _close_lanes(self) -> None:
        for lane in self.lanes:
            lane.close(p.CLOSE_NORMAL, "the page's play socket closed")
        self.lanes = []
        self.lane_key = secrets.token_urlsafe(18)

    def frame_outboxes(self) -> list[Outbox]:
        """The page's sockets that carry frames: its play socket, then its lanes."""
        return [] if self.outbox is None else [self.outbox, *self.lanes]

    def next_frame_outbox(self) -> Outbox | None:
        """The socket for the next frame: they take turns (:func:`outbox.next_turn`)."""
        boxes = self.frame_outboxes()
        if not boxes:
            return None
        turn = next_turn(boxes, self.lane_turn)
        self.lane_turn = turn + 1
        return boxes[turn]

    def fresh_input(self, seq: int | None) -> bool:
        """False for an input already received (the page sends each one on all its sockets)."""
        if seq is None:
            return True
        if seq <= self.last_input_seq:
            return False
        self.last_input_seq = seq
        return True

    # -- helpers ------------------------------------------------------------------------
    async def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(db, ...)`` with its own database session in a thread."""

        def work() -> T:
            with self._sessions() as session:
                return fn(session, *args, **kwargs)

        return await asyncio.to_thread(work)

    async def participant_state(self, last_env: str | None = None) -> dict[str, Any] | None:
        """ParticipantState of a participant's session (None for a designer's test play)."""
        pid = self.principal.participant_id
        if pid is None:
            return None
        return await self.db(progress.state_for, self.study_id, self.spec, pid, last_env)

    def owned_by(self, principal: Principal) -> bool:
        """True when ``principal`` is the player of this session."""
        if self.principal.participant_id is not None:
            return principal.participant_id == self.principal.participant_id
        return principal.user_id is not None and principal.user_id == self.principal.user_id

    def send(self, message: dict[str, Any]) -> None:
        """A control message to the player, if connected."""
        if self.outbox is not None:
            self.outbox.send(message)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _episode_view(self) -> dict[str, Any] | None:
        run = self.run
        if run is None:
            return None
        return {"id": run.id, "index": run.index, "env_id": run.env_id, "seed": run.seed,
                "step": run.step, "return": run.return_,
                "ask_outcome": self.spec.asks_outcome(run.env_id)}  # fmt: skip

    def _env_view(self) -> dict[str, Any] | None:
        if self.worker is None or self.env_id is None:
            return None
        env = self.spec.environment(self.env_id)
        info = self.worker.info  # the camera the player switched to, not the first one
        info = info if self.camera is None else {**info, "camera": self.camera}
        return env_ready(env.id, info, self.speed, self.quality or env.image_quality)

    def disarm_pause_timer(self) -> None:
        """Stop the pause countdown."""
        self._pause_deadline = None
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None

    def pause_left_s(self) -> float:
        """Seconds before the running pause abandons the episode (the whole limit if no
        countdown runs)."""
        if self._pause_deadline is None:
            return self.spec.pause_timeout_s
        return max(0.0, round(self._pause_deadline - asyncio.get_running_loop().time(), 3))
