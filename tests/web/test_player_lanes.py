"""The player page with lanes (STUDIO_STREAM_LANES) in real Chromium: it opens them, draws the
frames that come over them, sends its inputs on two sockets, and opens new ones on reload."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import activate, counter_env, spec
from tests.web._join import join_study, to_ready_gate
from tests.web._ticks import ticks_later

pytestmark = pytest.mark.browser


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    return settings.model_copy(update={"stream_lanes": 2})


def test_frames_come_over_three_sockets_and_inputs_count_once(live_server, page, factory, db):  # type: ignore[no-untyped-def]
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    env = counter_env(episode_len=100_000, mode="async", fps=20)
    study = activate(db, factory.study(factory.user(), spec(env)))
    join_study(page, live_server, study.permalink_token, "P-lanes")
    to_ready_gate(page, "Counter")
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    for key in ("KeyA", "KeyB"):
        page.keyboard.down(key)
        ticks_later(page, 4)  # held over a few steps, each frame back on its lane
        page.keyboard.up(key)
        ticks_later(page, 4)
    page.reload()
    expect(page.locator("#st-phase")).to_have_text("paused")
    page.keyboard.press("Escape")  # resume
    expect(page.locator("#st-phase")).to_have_text("playing")
    page.locator("#screen").click()
    page.keyboard.down("KeyA")
    ticks_later(page, 4)
    page.keyboard.up("KeyA")
    ticks_later(page, 4)
    page.keyboard.press("Delete")
    expect(page.locator("#cancel-yes")).to_be_enabled()  # the question's guard is over
    page.keyboard.press("Enter")
    expect(page.locator("#after-save-text")).to_contain_text("canceled")

    lanes = [parse_qs(urlparse(url).query)["lane"][0] for url in sockets if "lane=" in url]
    assert len(lanes) == 4 and len(set(lanes)) == 2  # two lanes, a new key after the reload
    row = db.query(Episode).filter_by(study_id=study.id).one()
    assert row.status == EpisodeStatus.canceled
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    timings = [json.loads(s.custom_data["timing"]) for s in steps]
    inputs = [json.loads(s.custom_data["input"] or "null") for s in steps]
    drawn = {int(ack[0]) for t in timings for ack in t.get("acks", [])}
    assert {s % 3 for s in drawn} == {0, 1, 2}  # frames of every socket were drawn
    sent = [t["input_sent"] for t in timings if "input_sent" in t]
    assert len(sent) == len(set(sent)) == 6  # six key changes, each applied once
    keys = [raw["keys"] for raw in inputs if raw is not None]
    assert ["KeyA"] in keys and ["KeyB"] in keys
