"""Security headers on every page, static file and API answer; /docs served from the app."""

from __future__ import annotations

import re

import pytest

from server.core.headers import SECURITY_HEADERS
from server.main import WEB_DIR

PAGES = [
    "/",
    "/index.html",
    "/episodes.html",
    "/player.html",
    "/live.html",
    "/participants.html",
    "/phone.html",
    "/docs",
]
FILES = [
    "/shared/style.css",
    "/studio/app.js",
    "/player/player.js",
    "/favicon.svg",
    "/vendor/swagger-ui/swagger-ui-bundle.js",
]


def _assert_secured(res) -> None:  # type: ignore[no-untyped-def]
    for name, value in SECURITY_HEADERS.items():
        assert res.headers.get(name) == value, (res.request.url, name)
    csp = res.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert res.headers["X-Frame-Options"] == "DENY"
    assert res.headers["X-Content-Type-Options"] == "nosniff"
    assert res.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("path", PAGES + FILES)
def test_pages_and_files_carry_the_security_headers(client, path):
    res = client.get(path)
    assert res.status_code == 200, path
    _assert_secured(res)


def test_api_answers_and_errors_carry_them(client, settings):
    _assert_secured(client.get("/api/health"))
    _assert_secured(client.get("/openapi.json"))
    _assert_secured(client.get("/api/auth/me"))  # 401
    _assert_secured(client.get("/api/nope"))  # 404
    _assert_secured(client.get("/api/studies/1%00"))  # 422 from a middleware
    big = b"x" * (settings.max_body_bytes + 1)
    res = client.post("/api/auth/login", content=big)  # 413 from a middleware
    assert res.status_code == 413
    _assert_secured(res)


def test_the_pages_have_no_inline_script_or_handler():
    for page in sorted(WEB_DIR.glob("*.html")):
        html = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert "src=" in tag, f"inline script in {page.name}: {tag}"
        assert not re.search(r"\son[a-z]+\s*=", html), f"inline event handler in {page.name}"
        assert not re.search(r"\sstyle\s*=", html), f"inline style attribute in {page.name}"


def test_the_pages_and_modules_name_files_that_exist():
    """Every script, style sheet and import a page or module names is a file under web/."""
    for path in sorted(WEB_DIR.rglob("*.*")):
        if path.suffix not in {".html", ".js"} or "vendor" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".html":
            refs = re.findall(r'<(?:script|link)\b[^>]*(?:src|href)="([^"]+)"', text)
        else:
            refs = re.findall(r'(?:^import\b[^"]*|\bimport\()"(\.{1,2}/[^"]+)"', text, re.M)
        assert refs or path.suffix == ".js" or path.name == "docs.html", path
        for ref in refs:
            base = WEB_DIR if ref.startswith("/") or path.suffix == ".html" else path.parent
            target = (base / ref.lstrip("/")).resolve()
            assert target.is_file(), f"{path.relative_to(WEB_DIR)} names {ref}"


def test_nothing_is_loaded_from_another_origin():
    """The pages and their modules name no other origin (the vendored files are checked
    in a browser with the network limited to the app, tests/web/test_pages.py)."""
    for path in sorted(WEB_DIR.rglob("*.*")):
        if path.suffix not in {".html", ".js", ".css"} or "vendor" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        # the SVG namespace is a name, not something fetched
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'`)]*", text))
        urls = {u for u in urls if "www.w3.org/2000/svg" not in u}
        assert not urls, f"{path.name} names {urls}"


def test_docs_is_the_vendored_swagger_ui_with_same_origin_assets_only(client):
    res = client.get("/docs")
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/html")
    refs = re.findall(r'(?:src|href)="([^"]+)"', res.text)
    assert "/vendor/swagger-ui/swagger-ui-bundle.js" in refs
    assert "/vendor/swagger-ui/swagger-ui.css" in refs
    for ref in refs:
        assert ref.startswith("/") and not ref.startswith("//"), ref
        assert client.get(ref).status_code == 200, ref
    assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", res.text)  # no inline script
    assert client.get("/redoc").status_code == 404  # not vendored: off
