"""A play session's background tasks and its countdowns (the pause's, the reconnection's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class Tasks:
    """Tasks a session started, kept referenced until they end."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` in the background."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


class Countdown:
    """One timer: after ``delay`` seconds, run ``then`` (unless disarmed first)."""

    def __init__(self, tasks: Tasks) -> None:
        self._tasks = tasks
        self._task: asyncio.Task[None] | None = None
        self._deadline: float | None = None  # the event loop's time it ends at

    @property
    def armed(self) -> bool:
        """True while the countdown runs."""
        return self._task is not None

    def arm(self, delay: float, then: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """(Re)start the countdown."""
        self.disarm()
        self._deadline = asyncio.get_running_loop().time() + delay
        self._task = self._tasks.spawn(self._run(delay, then))

    async def _run(self, delay: float, then: Callable[[], Coroutine[Any, Any, None]]) -> None:
        await asyncio.sleep(delay)
        await then()

    def expired(self) -> None:
        """The countdown ran out (called by ``then``): it no longer runs."""
        self._task, self._deadline = None, None

    def disarm(self) -> None:
        """Stop the countdown."""
        self._deadline = None
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def left_s(self, whole: float) -> float:
        """Seconds left (``whole`` when the countdown does not run)."""
        if self._deadline is None:
            return whole
        return max(0.0, round(self._deadline - asyncio.get_running_loop().time(), 3))
