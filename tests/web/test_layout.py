"""The layout of web/: each page's .html at the root (its URL), its modules in a folder of
the same name, shared/ for what every page uses, and no module over 400 lines."""

from __future__ import annotations

import re

from server.main import WEB_DIR

# page -> its folder (index.html is the studio: the designer's studies, users and editor)
PAGES = {
    "index.html": "studio",
    "player.html": "player",
    "phone.html": "phone",
    "episodes.html": "episodes",
    "live.html": "live",
    "participants.html": "participants",
    "datasets.html": "datasets",
    "docs.html": "docs",
}
LIMIT = 400


def _own_files():
    return [
        p
        for p in WEB_DIR.rglob("*.*")
        if p.suffix in {".js", ".css", ".html"} and "vendor" not in p.relative_to(WEB_DIR).parts
    ]


def test_no_page_module_is_over_400_lines():
    long = {
        str(p.relative_to(WEB_DIR)): n
        for p in _own_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not long, long


def test_each_page_loads_its_own_folder_and_shared_only():
    assert sorted(p.name for p in WEB_DIR.glob("*.html")) == sorted(PAGES)
    for page, folder in PAGES.items():
        html = (WEB_DIR / page).read_text(encoding="utf-8")
        refs = re.findall(r'<(?:script|link)\b[^>]*(?:src|href)="/?([^"]+)"', html)
        own = [r for r in refs if not r.startswith(("vendor/", "favicon.svg"))]
        assert own, page
        for ref in own:
            assert ref.split("/")[0] in {folder, "shared", "editor"}, f"{page} loads {ref}"


def test_every_page_draws_its_top_bar_with_the_shared_module():
    """No page writes the brand or the breadcrumb in its HTML: shared/topbar.js draws them."""
    for page in PAGES:
        html = (WEB_DIR / page).read_text(encoding="utf-8")
        assert 'class="brand"' not in html and "Breadcrumb" not in html, page
        assert "skip-link" not in html, page
    users = {p.parent.name for p in _own_files() if "renderTopbar(" in p.read_text("utf-8")}
    assert users >= {
        "studio",
        "player",
        "phone",
        "episodes",
        "live",
        "participants",
        "datasets",
        "shared",
    }
