"""Login brute-force limit: failed logins counted per account and per client address.

The counts live in this process's memory: one server process sees every login. With
several replicas each keeps its own counts, so an attacker gets the limit once per replica
(docs/security.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

# Keys kept at most (accounts plus addresses): a spray of random emails from many addresses
# cannot grow memory without bound; the oldest keys are dropped first.
MAX_KEYS = 100_000


class LoginLimiter:
    """Sliding-window counts of failed logins; thread-safe (login runs in a thread pool)."""

    def __init__(
        self,
        max_per_account: int,
        max_per_address: int,
        window_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_per_account = max_per_account
        self.max_per_address = max_per_address
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = {}

    @staticmethod
    def _keys(account: str, address: str) -> tuple[str, str]:
        return f"account:{account.strip().lower()}", f"address:{address}"

    def retry_after(self, account: str, address: str) -> int:
        """Seconds until a login for ``account`` from ``address`` is allowed; 0 when it is."""
        now = self._clock()
        account_key, address_key = self._keys(account, address)
        with self._lock:
            wait = max(
                self._wait(account_key, self.max_per_account, now),
                self._wait(address_key, self.max_per_address, now),
            )
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, account: str, address: str) -> None:
        """Count one failed login against the account and the address."""
        now = self._clock()
        with self._lock:
            for key in self._keys(account, address):
                times = self._failures.pop(key, None) or deque()
                self._expire(times, now)
                times.append(now)
                self._failures[key] = times  # re-inserted: the dict stays oldest-first
            if len(self._failures) > MAX_KEYS:
                self._prune(now)

    def succeeded(self, account: str) -> None:
        """A successful login clears the account's failures (not the address's)."""
        with self._lock:
            self._failures.pop(self._keys(account, "")[0], None)

    def _wait(self, key: str, limit: int, now: float) -> float:
        times = self._failures.get(key)
        if not times:
            return 0.0
        self._expire(times, now)
        if len(times) < limit:
            return 0.0
        # Allowed again when enough of the failures in the window have aged out of it.
        return times[len(times) - limit] + self.window_s - now

    def _expire(self, times: deque[float], now: float) -> None:
        while times and times[0] <= now - self.window_s:
            times.popleft()

    def _prune(self, now: float) -> None:
        for key in list(self._failures):
            self._expire(self._failures[key], now)
            if not self._failures[key]:
                del self._failures[key]
        while len(self._failures) > MAX_KEYS:
            del self._failures[next(iter(self._failures))]
