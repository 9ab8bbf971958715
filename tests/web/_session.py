"""A designer's browser session for the studio pages' tests."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.factories import PASSWORD


def log_in(page: Page, base: str, email: str) -> None:
    """Log ``page``'s browser context in as ``email`` (the cookies the pages use)."""
    res = page.request.post(f"{base}/api/auth/login", data={"email": email, "password": PASSWORD})
    assert res.ok
