"""This replica's heartbeat: its live sessions to the database each tick, and failover.

Two background tasks, off the players' path: the *beat* snapshots the registry in the event
loop (attribute reads, no locks, no awaits) and writes it with the heartbeat stamp in one
transaction in a thread, then renews its participants' session leases and ends the sessions
whose lease another replica took over (server/services/crowd/leases.py); the *watch* abandons the
episodes of replicas whose heartbeat stopped. Phases are reported as ``waiting`` (idle,
starting, at the ready gate), ``playing``, ``paused`` or ``ended`` (the env ended it; the
save question is open).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from server.core.config import Settings
from server.core.replica import ReplicaInfo
from server.player.registry import Registry
from server.player.session import Phase
from server.recording.signals import percentile
from server.services.crowd import leases
from server.services.live import replicas

log = logging.getLogger(__name__)

REPORTED = {Phase.idle: "waiting", Phase.starting: "waiting", Phase.ready: "waiting",
            Phase.playing: "playing", Phase.paused: "paused", Phase.ended: "ended"}  # fmt: skip
LATENCY_WINDOW = 120  # the recent inputs whose latency the dashboard's p50 is over


class Heartbeat:
    """Registers this replica, beats every ``heartbeat_interval_s``, watches the others."""

    def __init__(self, registry: Registry, settings: Settings, db: sessionmaker[Session],
                 me: ReplicaInfo) -> None:  # fmt: skip
        self.registry = registry
        self.settings = settings
        self.me = me
        self._db = db
        # per event loop: one in production; tests' clients each run the app's lifespan
        self._tasks: dict[asyncio.AbstractEventLoop, list[asyncio.Task[None]]] = {}
        self._last: dict[str, tuple[str, int, float]] = {}  # session: episode, step, time
        self.write_ms: list[float] = []  # the last ticks' write times (docs/deploy.md)
        self._ending: set[asyncio.Task[None]] = set()  # sessions whose lease was taken over

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._db() as db:
            return fn(db, *args)

    async def start(self) -> None:
        """Register, then beat and watch in the background."""
        if not self._tasks:  # the first start of this process: no session of ours is live
            await asyncio.to_thread(self._run, leases.clear_replica, self.me.id)
        await asyncio.to_thread(self._run, replicas.register, self.me)
        loop = asyncio.get_running_loop()
        beat = loop.create_task(self._beat_loop(), name="replica-heartbeat")
        self._tasks[loop] = [beat, loop.create_task(self._watch_loop(), name="replica-watch")]

    async def stop(self) -> None:
        """Stop the tasks and remove this replica's rows (a clean stop)."""
        tasks = self._tasks.pop(asyncio.get_running_loop(), [])
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if not self._tasks:
            await asyncio.to_thread(self._run, replicas.deregister, self.me)

    def snapshot(self) -> list[tuple[replicas.LiveRow, list[float]]]:
        """The registry's sessions now, each with its recent input latencies (their p50 is
        taken in the writer's thread: :func:`with_latency`); fps from the step change since
        the last tick."""
        now = time.monotonic()
        rows, last = [], {}
        for live in list(self.registry.sessions.values()):
            phase = REPORTED.get(live.phase)
            if phase is None:
                continue
            run = live.run
            fps, latencies = None, []
            if run is not None:
                previous = self._last.get(live.id)
                last[live.id] = (run.id, run.step, now)
                if previous is not None and previous[0] == run.id and now > previous[2]:
                    fps = round((run.step - previous[1]) / (now - previous[2]), 1)
                latencies = run.latencies_ms[-LATENCY_WINDOW:]
            row = replicas.LiveRow(
                session_id=live.id, study_id=live.study_id,
                participant_id=live.principal.participant_id, user_id=live.principal.user_id,
                env_key=run.env_id if run is not None else live.env_id, phase=phase,
                has_worker=live.worker is not None,
                episode_id=run.id if run is not None else None,
                step=run.step if run is not None else None, fps=fps, latency_p50_ms=None,
                frames_dropped=run.frames_dropped if run is not None else 0,
            )  # fmt: skip
            rows.append((row, latencies))
        self._last = last
        return rows

    def _write(self, snapshot: list[tuple[replicas.LiveRow, list[float]]]) -> set[str]:
        """Write the tick; the participants' sessions whose lease was taken over elsewhere."""
        started = time.perf_counter()
        rows = with_latency(snapshot)
        try:
            self._run(replicas.beat, self.me, rows)
        except Exception:  # the live rows could not be written: the heartbeat still must be
            log.exception("live sessions of replica %s not written", self.me.id)
            self._run(replicas.beat, self.me, [])
        self.write_ms = [*self.write_ms[-99:], (time.perf_counter() - started) * 1000]
        crowd = [row.session_id for row in rows if row.participant_id is not None]
        return self._run(leases.renew, self.me.id, crowd) if crowd else set()

    async def _beat_loop(self) -> None:
        interval = self.settings.heartbeat_interval_s
        while True:
            began = time.monotonic()
            try:
                lost = await asyncio.to_thread(self._write, self.snapshot())
            except Exception:  # a database hiccup: the next tick tries again
                log.exception("heartbeat of replica %s failed", self.me.id)
            else:
                for session_id in lost:
                    live = self.registry.get(session_id)
                    if live is not None:
                        task = asyncio.create_task(live.taken_over(), name="lease-lost")
                        self._ending.add(task)
                        task.add_done_callback(self._ending.discard)
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - began)))

    async def _watch_loop(self) -> None:
        s = self.settings
        while True:
            await asyncio.sleep(s.heartbeat_interval_s)
            try:
                await asyncio.to_thread(self._run, replicas.take_over_dead,
                                        s.replica_dead_after_s, self.me.id)  # fmt: skip
            except Exception:
                log.exception("replica %s could not check the other replicas", self.me.id)


def with_latency(snapshot: list[tuple[replicas.LiveRow, list[float]]]) -> list[replicas.LiveRow]:
    """The rows with the p50 of their recent input latencies (off the event loop)."""
    return [replace(row, latency_p50_ms=percentile(latencies, 50)) for row, latencies in snapshot]
