"""What the runtime raises to the app (``server.runtime``'s docstring)."""

from __future__ import annotations


class WorkerError(RuntimeError):
    """Base class of runtime errors seen by the app."""


class WorkerTimeout(WorkerError):
    """The worker did not answer in time; it has been killed."""


class WorkerClosed(WorkerError):
    """The worker is closed or died (use after close, crash, kill)."""


class RemoteError(WorkerError):
    """An exception raised in the worker: ``kind`` (type name), message and traceback."""

    def __init__(self, kind: str, message: str, traceback: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.traceback = traceback
