"""Domain errors; ``server.main`` maps each to one HTTP status in one place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def validation_detail(
    errors: Iterable[Mapping[str, Any]], prefix: tuple[str | int, ...] = ()
) -> list[dict[str, Any]]:
    """Pydantic errors as ``[{"loc": [...], "msg": ..., "type": ...}]`` (no input echoed).

    An error raised for a whole object about one of its fields carries that field's path in
    its context (``ctx["path"]``, as ``server.study_spec.reject_control_chars`` does): it is
    added to ``loc``, so the answer names the field."""
    return [
        {
            "loc": [*prefix, *err["loc"], *((err.get("ctx") or {}).get("path") or ())],
            "msg": err["msg"],
            "type": err["type"],
        }
        for err in errors
    ]


class DomainError(Exception):
    """Base of errors a client caused; ``status`` is the HTTP answer."""

    status = 400

    def __init__(self, message: str, *, detail: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.code = code  # a machine-readable reason, sent as ``code`` when set


class NotFound(DomainError):
    status = 404


class Conflict(DomainError):
    status = 409


class Invalid(DomainError):
    """422 with ``detail`` as a list of ``{"loc": [...], "msg": ...}`` like FastAPI's own."""

    status = 422


class Unauthorized(DomainError):
    status = 401


class Forbidden(DomainError):
    status = 403


class TooLarge(DomainError):
    """413: a body, a file or an environment's frame or observation over a documented size
    limit (a worker's crosses the pipe by its name, ``RemoteError.kind == "TooLarge"``)."""

    status = 413


class Busy(DomainError):
    """503: past an operator-set limit; the client may retry after ``retry_after`` seconds."""

    status = 503

    def __init__(self, message: str, *, retry_after: int, code: str = "busy") -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after
