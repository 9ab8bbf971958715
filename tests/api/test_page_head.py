"""Each page is served whole: the common head of web/shared/page.html, then the page's own."""

from __future__ import annotations

import re

from server.main import WEB_DIR

COMMON = ['<meta charset="utf-8">', 'name="viewport"', 'rel="icon"', 'href="shared/style.css"']


def test_each_page_has_the_common_head_once_then_its_own(client):
    pages = [p.name for p in WEB_DIR.glob("*.html") if p.name != "docs.html"]
    for path in ["/", *(f"/{name}" for name in pages)]:
        res = client.get(path)
        assert res.status_code == 200 and res.headers["content-type"].startswith("text/html")
        html = res.text
        assert html.startswith("<!doctype html>") and html.count("<!doctype") == 1, path
        for needle in COMMON:
            assert html.count(needle) == 1, (path, needle)
        head = html[: html.index("\n<body")]
        assert len(re.findall(r"<title>[^<]*RLDS Studio</title>", head)) == 1, path
        own = (WEB_DIR / (path.strip("/") or "index.html")).read_text(encoding="utf-8")
        assert html.endswith(own), path
        again = client.get(path, headers={"If-None-Match": res.headers["etag"]})
        assert again.status_code == 304 and again.content == b"", path


def test_a_whole_document_and_other_files_are_served_as_they_are(client):
    assert client.get("/docs.html").text == (WEB_DIR / "docs.html").read_text(encoding="utf-8")
    shell = (WEB_DIR / "shared" / "page.html").read_text(encoding="utf-8")
    assert client.get("/shared/page.html").text == shell
    assert client.get("/nope.html").status_code == 404
