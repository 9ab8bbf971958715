"""The layout check of the browser tests: no two visible controls of the page overlap, none
spills its text or is cut off, nothing is wider than the screen (tests/web/_layout.js
collects the boxes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page

CONTROLS_JS = (Path(__file__).parent / "_layout.js").read_text()


def assert_laid_out(page: Page, screen: str) -> None:
    """No two visible controls overlap, their text included (1 px of slack); no control's text
    is wider than it; none is cut off by a box that hides its overflow; nothing is wider than
    the screen."""
    found: dict[str, Any] = page.evaluate(CONTROLS_JS)
    controls = found["controls"]
    assert controls, f"{screen}: no visible control"
    where = f"{screen} at {page.viewport_size}"
    assert found["scrollWidth"] <= found["width"], (
        f"{where}: the page is {found['scrollWidth']} px wide on a {found['width']} px screen"
    )
    spilled = [c["name"] for c in controls if c["spills"]]
    assert not spilled, f"{where}: text wider than its control: {', '.join(spilled)}"
    cut = [c["name"] for c in controls if c["cut"]]
    assert not cut, f"{where}: cut off by the box around it: {', '.join(cut)}"
    overlaps = []
    for i, a in enumerate(controls):
        assert a["left"] >= -1 and a["right"] <= found["width"] + 1, (
            f"{where}: {a['name']} is outside the screen ({a['left']:.0f}-{a['right']:.0f} px)"
        )
        for b in controls[i + 1 :]:
            if a["index"] in b["inside"] or b["index"] in a["inside"]:
                continue
            dx = min(a["right"], b["right"]) - max(a["left"], b["left"])
            dy = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if dx > 1 and dy > 1:
                overlaps.append(f"{a['name']} and {b['name']} ({dx:.0f}×{dy:.0f} px)")
    assert not overlaps, f"{where}: controls overlap: {'; '.join(overlaps)}"
