"""Waiting on the game's own clock in a browser test, instead of a fixed sleep."""

from __future__ import annotations


def ticks_later(page, n: int = 6) -> None:  # type: ignore[no-untyped-def]
    """Wait until the game has stepped ``n`` more times, as the page shows (about 100 ms at
    60 fps, longer when the machine is slow): an input sent before it is behind at least one
    tick, and its step has come back."""
    step = page.locator("#st-step")
    target = int(step.inner_text()) + n
    while int(step.inner_text()) < target:
        page.wait_for_timeout(10)
