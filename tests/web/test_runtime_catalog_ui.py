"""The editor's environment picker names each entry's runtime, and for one that is not
installed says so and what the operator runs (real Chromium). The server's runtimes folder
holds only dm_control here (the installed one, linked), so Robosuite's entries are missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from server.runtime import runtimes
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("STUDIO_SHOTS", "/tmp/shots/runtimes"))


@pytest.fixture
def settings(settings, tmp_path):  # type: ignore[no-untyped-def]
    found = runtimes.state("dm_control")
    if not found.ok:
        pytest.fail(f"the dm_control runtime is needed: run `make runtimes` ({found.message})")
    root = tmp_path / "runtimes"
    root.mkdir()
    (root / "dm_control").symlink_to(runtimes.RUNTIMES["dm_control"].venv)
    runtimes.forget()
    yield settings.model_copy(update={"runtimes_dir": root})
    runtimes.configure(None)  # the app set it for this test process: the default again
    runtimes.forget()


def test_the_catalog_shows_each_runtime_and_what_installs_a_missing_one(live_server, page, factory):
    log_in(page, live_server, factory.user())
    page.get_by_role("button", name="New study").first.click()
    page.get_by_role("button", name="+ Add environment").click()
    dialog = page.get_by_role("dialog", name="Add an environment")
    search = dialog.get_by_label("Search the catalog")
    search.press_sequentially("robosuite")
    can = dialog.get_by_role("button", name="Add Robosuite-PickPlaceCan", exact=True)
    expect(can).to_be_disabled()
    expect(can).to_contain_text("runtime robosuite")
    expect(can).to_contain_text("not installed here (robosuite runtime)")
    expect(can).to_contain_text("the operator runs rlds-studio runtimes install robosuite")
    SHOTS.mkdir(parents=True, exist_ok=True)
    dialog.screenshot(path=str(SHOTS / "catalog-robosuite-missing.png"))
    search.fill("")
    search.press_sequentially("point_mass")
    point = dialog.get_by_role("button", name="Add dm_control-point_mass-easy", exact=True)
    expect(point).to_be_enabled()
    expect(point).to_contain_text("runtime dm_control")
    expect(point).not_to_contain_text("not installed")
    point.click()
    expect(dialog).to_be_hidden()
    card = page.get_by_role("article", name="Environment 1: dm_control-point_mass-easy")
    expect(card).to_be_visible()
