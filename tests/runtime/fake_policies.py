"""Policies for the shared-autonomy tests, allowed through ``STUDIO_POLICIES`` (see
:data:`ALLOWED`): a real worker imports them as it would an installed package's."""

from __future__ import annotations

import time
from typing import Any

FAKE = "tests.runtime.fake_policies"
ALLOWED = [f"gives-two={FAKE}:gives_two", f"fails-fourth={FAKE}:fails_fourth",
           f"slow-third={FAKE}:slow_third", f"slow-always={FAKE}:slow_always"]  # fmt: skip
SLOW_S = 2.0  # slow-third's third proposal: past any test's step budget
STEADY_S = 0.15  # slow-always's every proposal: past a 50 ms budget, within Validate's wait


class GivesTwo:
    """Proposes action 2 (the counter env's KeyB); raises, or takes too long, on one proposal
    when asked."""

    def __init__(
        self, fail_at: int | None = None, slow_at: int | None = None, every_s: float = 0.0
    ) -> None:
        self.calls = 0
        self.fail_at = fail_at
        self.slow_at = slow_at
        self.every_s = every_s

    def reset(self) -> None:
        self.calls = 0

    def act(self, _observation: Any) -> int:
        self.calls += 1
        if self.calls == self.fail_at:
            raise ValueError("lost track of the counter")
        if self.calls == self.slow_at:
            time.sleep(SLOW_S)  # really too slow: the step stops waiting for it
        time.sleep(self.every_s)
        return 2


def gives_two(_action_spec: Any, _observation_spec: Any) -> GivesTwo:
    return GivesTwo()


def fails_fourth(_action_spec: Any, _observation_spec: Any) -> GivesTwo:
    return GivesTwo(fail_at=4)


def slow_third(_action_spec: Any, _observation_spec: Any) -> GivesTwo:
    return GivesTwo(slow_at=3)


def slow_always(_action_spec: Any, _observation_spec: Any) -> GivesTwo:
    return GivesTwo(every_s=STEADY_S)
