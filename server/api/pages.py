"""The pages of ``web/``: each root ``.html`` holds only the page's own head (title, style
sheets, scripts) and body, served after ``web/shared/page.html``, the head every page shares
(charset, viewport, icon, the common style). A file that starts with a doctype is a whole
document, served as it is (``docs.html``: Swagger UI, without the studio's style)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from fastapi.responses import HTMLResponse
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.staticfiles import NotModifiedResponse, StaticFiles
from starlette.types import Scope

SHELL = Path("shared") / "page.html"


class PageFiles(StaticFiles):
    """``web/`` as static files, its pages put together with their common head."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        path = Path(full_path)
        root = Path(str(self.directory)).resolve()
        if path.suffix == ".html" and path.parent == root:
            page = path.read_text(encoding="utf-8")
            if not page.lstrip().lower().startswith("<!doctype"):
                shell = (root / SHELL).read_text(encoding="utf-8")
                response = HTMLResponse(shell + page, status_code=status_code)
                # revalidated like the files it is made of: a 304 while neither changed
                response.headers["etag"] = f'"{hashlib.md5(response.body).hexdigest()}"'
                if self.is_not_modified(response.headers, Headers(scope=scope)):
                    return NotModifiedResponse(response.headers)
                return response
        return super().file_response(full_path, stat_result, scope, status_code)
