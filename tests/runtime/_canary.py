"""A module no test imports: its presence in ``sys.modules`` shows that something imported
a designer-named module (tests check it never happens)."""

from __future__ import annotations

from typing import Any

from tests.runtime.fake_envs import CounterEnv


def make(**kwargs: Any) -> CounterEnv:
    """A working dm_env factory: only the allow-list keeps it from being built."""
    return CounterEnv(**kwargs)
