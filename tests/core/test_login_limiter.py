"""The login limiter's sliding window, with a hand-driven clock."""

from __future__ import annotations

from server.core import login_limit
from server.core.login_limit import LoginLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_window_slides():
    clock = Clock()
    limiter = LoginLimiter(max_per_account=3, max_per_address=100, window_s=60, clock=clock)
    for _ in range(3):
        assert limiter.retry_after("a@x.org", "h") == 0
        limiter.failed("a@x.org", "h")
        clock.now += 10
    # failures at 1000, 1010, 1020; now 1030: the oldest leaves the window at 1060
    assert limiter.retry_after("A@x.org ", "h") == 30
    clock.now = 1059.5
    assert limiter.retry_after("a@x.org", "h") == 1
    clock.now = 1060.0
    assert limiter.retry_after("a@x.org", "h") == 0
    limiter.failed("a@x.org", "h")  # three in the window again
    assert limiter.retry_after("a@x.org", "h") == 10


def test_success_clears_the_account_but_not_the_address():
    clock = Clock()
    limiter = LoginLimiter(max_per_account=2, max_per_address=3, window_s=60, clock=clock)
    limiter.failed("a@x.org", "h")
    limiter.failed("a@x.org", "h")
    assert limiter.retry_after("a@x.org", "other") == 60
    limiter.succeeded("a@x.org")
    assert limiter.retry_after("a@x.org", "other") == 0
    limiter.failed("b@x.org", "h")
    assert limiter.retry_after("c@x.org", "h") == 60  # the address has 3 failures


def test_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(login_limit, "MAX_KEYS", 50)
    clock = Clock()
    limiter = LoginLimiter(max_per_account=5, max_per_address=5, window_s=60, clock=clock)
    for n in range(200):
        limiter.failed(f"u{n}@x.org", f"10.0.{n}.1")
    assert len(limiter._failures) <= 50
    clock.now += 61
    limiter.failed("last@x.org", "h")
    assert len(limiter._failures) <= 50
