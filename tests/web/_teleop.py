"""Helpers of the robot teleoperation browser tests: a participant opens a catalog robot
environment at its ready gate, and holds keys as a person does (down, watch the step counter
on screen for as long as the move takes, up), saves the episode, and loads its exports with
each format's own library."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus, Study
from server.recording.writer import open_reader
from server.runtime.catalog import CatalogEntry
from tests.export.conftest import ROOT
from tests.export.consumers import check_report
from tests.player.conftest import activate, spec
from tests.web._join import join_study, to_ready_gate


def open_game(page, live_server: str, factory, db, entry: CatalogEntry, **env: Any) -> Study:
    """An active study of ``entry`` (its catalog source, mode and fps; ``env`` adds fields,
    ``name`` among them), opened by a participant up to the game's ready gate."""
    fields = {"id": "robot", "source": entry.source().model_dump(), "mode": entry.mode,
              "fps": entry.fps, **env}  # fmt: skip
    study = activate(db, factory.study(factory.user(), spec(fields)))
    join_study(page, live_server, study.permalink_token, "T-1")
    to_ready_gate(page, fields["name"])
    return study


def steps_on_screen(page) -> int:
    """The step counter the player shows."""
    return int(page.locator("#st-step").text_content() or 0)


def hold(page, key: str, steps: int) -> None:
    """Hold ``key`` while the picture moves on ``steps`` steps, then let go."""
    start = steps_on_screen(page)
    page.keyboard.down(key)
    page.wait_for_function(
        f"() => Number(document.getElementById('st-step').textContent) >= {start + steps}",
        polling=5,
    )
    page.keyboard.up(key)


def wait_steps(page, steps: int) -> None:
    """Let ``steps`` steps go by with no key held."""
    start = steps_on_screen(page)
    expect(page.locator("#st-step")).not_to_have_text(str(start))
    page.wait_for_function(
        f"() => Number(document.getElementById('st-step').textContent) >= {start + steps}",
        polling=20,
    )


def save_episode(page, db, study: Study) -> tuple[Episode, list[Any]]:
    """The episode ends by itself: save it; its row (completed) and its logged steps."""
    expect(page.locator("#save-dialog")).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    (row,) = db.query(Episode).filter_by(study_id=study.id).all()
    db.refresh(row)
    assert row.status == EpisodeStatus.completed
    with open_reader(row.storage_path) as reader:
        return row, list(reader.steps)


def load_steps(fmt: str, out: Path, name: str) -> dict:
    """Who drove each step and its frame's camera, as the format's own library loads the
    export of ``name`` at ``out`` (tests/export/control_check.py in the format's venv)."""
    docs = str(ROOT / "docs" / "export.md")
    args = {"rlds": [str(out)], "lerobot": [docs, str(out), name],
            "minari": [docs, str(out), f"{name}-v1"]}[fmt]  # fmt: skip
    return check_report(fmt, "control", fmt, *args)
