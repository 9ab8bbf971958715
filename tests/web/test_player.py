"""The player page in real Chromium: keyboard, gamepad, save, reject, cancel, pause, reload."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import activate, counter_env, spec

pytestmark = pytest.mark.browser


@pytest.fixture
def designer(factory):
    return factory.user()


def _participant(page, live_server, factory, designer, db, env, who="P-7"):
    """Open the study's permalink and join as a participant, typing the id as a person would."""
    study = activate(db, factory.study(designer, spec(env)))
    page.goto(f"{live_server}/player.html?token={study.permalink_token}")
    page.get_by_label("Participant ID").fill(who)
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#study-name")).to_have_text("Player test")
    return study


def _play(page, env_name="Counter"):
    page.get_by_role("button", name=f"Play {env_name}").click()
    expect(page.locator("#st-phase")).to_have_text("playing")
    expect(page.locator("#screen")).to_be_focused()
    expect(page.locator("#st-step")).to_have_text("0")


def _episode(db, study):
    rows = db.query(Episode).filter_by(study_id=study.id).all()
    assert len(rows) == 1
    db.refresh(rows[0])
    return rows[0]


def test_keyboard_episode_to_the_end_and_saved(live_server, page, factory, designer, db):
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=5))
    expect(page.locator("#study-instructions h1")).to_have_text("Hi")
    _play(page)
    expect(page.locator("#legend")).to_contain_text("one")
    for _ in range(5):
        page.keyboard.press("KeyA")
    dialog = page.locator("#save-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("6 steps, return 5")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    row = _episode(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 6 and row.total_reward == 5.0
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    assert len(steps) == 6
    assert [json.loads(s.custom_data["input"]) for s in steps[1:]] == [
        {"keys": ["KeyA"], "buttons": {}, "axes": []}
    ] * 5
    timing = [json.loads(s.custom_data["timing"]) for s in steps]
    assert all("input_sent" in t and "input_recv" in t for t in timing[1:])
    acked = [a[0] for t in timing for a in t.get("acks", [])]
    assert acked == sorted(acked) and 0 in acked  # frames drawn were acknowledged
    assert row.latency_p50_ms is not None and row.latency_p95_ms >= row.latency_p50_ms
