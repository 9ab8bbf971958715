"""Server push for the live dashboard: one database read per study per tick, shared.

Each study with at least one viewer on this replica has one channel: a task that reads
:func:`server.services.live.dashboard.snapshot` every ``heartbeat_interval_s`` (in a thread) and
hands the same JSON text to every viewer's queue. A viewer that falls behind only ever gets
the newest snapshot. The channel stops when its last viewer leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator

from sqlalchemy.orm import Session, sessionmaker

from server.core.config import Settings
from server.services.live import dashboard

log = logging.getLogger(__name__)


class _Channel:
    def __init__(self) -> None:
        self.viewers: set[asyncio.Queue[str | None]] = set()
        self.task: asyncio.Task[None] | None = None
        self.last: str | None = None
        self.reads = 0  # database reads so far (one per tick, whatever the viewers)


class LiveFeed:
    """The channels of this replica, keyed by study id."""

    def __init__(self, db: sessionmaker[Session], settings: Settings) -> None:
        self._db = db
        self._settings = settings
        self.channels: dict[int, _Channel] = {}

    def _read(self, study_id: int) -> str | None:
        with self._db() as db:
            data = dashboard.snapshot(db, study_id, self._settings.replica_dead_after_s)
        return None if data is None else json.dumps(data)

    async def _run(self, study_id: int, channel: _Channel) -> None:
        while channel.viewers:
            try:
                text = await asyncio.to_thread(self._read, study_id)
            except Exception:  # a database hiccup: viewers keep the last figures
                log.exception("live dashboard read of study %s failed", study_id)
            else:
                channel.reads += 1
                channel.last = text
                for queue in channel.viewers:
                    _put_latest(queue, text)
                if text is None:  # the study was deleted
                    return
            await asyncio.sleep(self._settings.heartbeat_interval_s)

    @contextlib.asynccontextmanager
    async def watch(self, study_id: int) -> AsyncIterator[asyncio.Queue[str | None]]:
        """A viewer's queue of snapshots (None: the study is gone) while the block runs."""
        channel = self.channels.get(study_id)
        if channel is None:
            channel = self.channels[study_id] = _Channel()
        queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=1)
        if channel.last is not None:
            queue.put_nowait(channel.last)
        channel.viewers.add(queue)
        if channel.task is None or channel.task.done():
            channel.task = asyncio.get_running_loop().create_task(
                self._run(study_id, channel), name=f"live-feed-{study_id}"
            )
        try:
            yield queue
        finally:
            channel.viewers.discard(queue)
            if not channel.viewers:
                if channel.task is not None:
                    channel.task.cancel()
                if self.channels.get(study_id) is channel:
                    del self.channels[study_id]

    async def close(self) -> None:
        """App shutdown: stop every channel (the viewers' sockets close with the server)."""
        loop = asyncio.get_running_loop()
        for study_id, channel in list(self.channels.items()):
            task = channel.task
            if task is not None and task.get_loop() is loop:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                del self.channels[study_id]


def _put_latest(queue: asyncio.Queue[str | None], text: str | None) -> None:
    """Replace what the viewer has not taken yet with ``text``."""
    with contextlib.suppress(asyncio.QueueEmpty):
        queue.get_nowait()
    queue.put_nowait(text)
