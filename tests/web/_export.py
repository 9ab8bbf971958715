"""The episodes page's export panel as a person uses it: wait for a job, download its archive."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect


def wait_export(page: Page) -> None:
    """The started export's progress bar fills and its job says it succeeded."""
    bar = page.get_by_role("progressbar", name="Export progress")
    expect(bar).to_have_attribute("aria-valuenow", "100", timeout=120_000)
    expect(page.locator("#job-state")).to_contain_text("succeeded")


def download_export(page: Page, saved: Path) -> Path:
    """Click the finished job's Download link and keep the archive at ``saved``."""
    with page.expect_download() as info:
        page.get_by_role("link", name="Download").click()
    info.value.save_as(saved)
    return saved
