"""One budget for the work that is not a player's: validation builds, video encodes and
export jobs.

Players come first: a player's worker never waits for this budget, and background work
starts only while the players leave room under ``STUDIO_MAX_WORKERS`` (so together they
stay within it unless players arrive while background work runs: then players still get
their workers). Background work also stays within ``STUDIO_MAX_BACKGROUND_WORKERS``.

A request past the limits waits in a bounded queue (``STUDIO_BACKGROUND_QUEUE`` waiters, at
most ``STUDIO_BACKGROUND_WAIT_S`` seconds each); when the queue is full or the wait runs
out it gets 503 with ``Retry-After`` and a message the page shows. Callers block a thread:
use it from sync routes (the threadpool), never on the event loop. Export jobs wait in
their own queue (the ``export_jobs`` table): a replica claims one only when it can take a
slot at once (:meth:`ProcessBudget.try_take`), so another replica with room may run it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from server.errors import Busy


class ProcessBudget:
    """Counting slots shared by every thread of this process (one per app)."""

    def __init__(
        self,
        *,
        max_workers: int,
        max_background: int,
        queue: int,
        wait_s: float,
        players: Callable[[], int] = lambda: 0,
    ) -> None:
        self.max_workers = max_workers
        self.max_background = max(1, min(max_background, max_workers))
        self.queue = queue
        self.wait_s = wait_s
        self._players = players
        self._cond = threading.Condition()
        self.in_use = 0
        self.waiting = 0
        self.peak = 0  # the most slots in use at once (tests and /api/health read it)

    def _free(self) -> int:
        # players in progress first: their workers count against the whole budget
        return min(
            self.max_background - self.in_use, self.max_workers - self._players() - self.in_use
        )

    def retry_after(self) -> int:
        """Seconds a refused client should wait before trying again."""
        return max(1, math.ceil(min(self.wait_s, 30.0)))

    def _busy(self, what: str) -> Busy:
        return Busy(
            f"The server is busy with other {what}s; try again in {self.retry_after()} s.",
            retry_after=self.retry_after(),
        )

    def try_take(self) -> bool:
        """Take one slot now if there is room (a job runner's claim); never waits."""
        with self._cond:
            if self._free() < 1:
                return False
            self.in_use += 1
            self.peak = max(self.peak, self.in_use)
            return True

    def give_back(self, n: int = 1) -> None:
        """Return slots taken with :meth:`try_take`."""
        with self._cond:
            self.in_use -= n
            self._cond.notify_all()

    @contextmanager
    def slots(self, n: int = 1, what: str = "validation") -> Iterator[int]:
        """Hold up to ``n`` slots, at least one; the number held is yielded."""
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            if self._free() < 1:
                if self.waiting >= self.queue:
                    raise self._busy(what)
                self.waiting += 1
                try:
                    while self._free() < 1:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise self._busy(what)
                        # players leaving do not notify: look again at least every second
                        self._cond.wait(timeout=min(left, 1.0))
                finally:
                    self.waiting -= 1
            held = max(1, min(n, self._free()))
            self.in_use += held
            self.peak = max(self.peak, self.in_use)
        try:
            yield held
        finally:
            self.give_back(held)
