"""Policies for the shared-autonomy tests, allowed through ``STUDIO_POLICIES`` (see
:data:`ALLOWED`): a real worker imports them as it would an installed package's."""

from __future__ import annotations

from typing import Any

FAKE = "tests.runtime.fake_policies"
ALLOWED = [f"gives-two={FAKE}:gives_two", f"fails-fourth={FAKE}:fails_fourth"]


class GivesTwo:
    """Proposes action 2 (the counter env's KeyB); raises on its fourth proposal when asked."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls = 0
        self.fail_at = fail_at

    def reset(self) -> None:
        self.calls = 0

    def act(self, _observation: Any) -> int:
        self.calls += 1
        if self.calls == self.fail_at:
            raise ValueError("lost track of the counter")
        return 2


def gives_two(_action_spec: Any, _observation_spec: Any) -> GivesTwo:
    return GivesTwo()


def fails_fourth(_action_spec: Any, _observation_spec: Any) -> GivesTwo:
    return GivesTwo(fail_at=4)
