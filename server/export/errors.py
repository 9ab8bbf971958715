"""Errors an export can end with; each says what is wrong in words a designer understands."""

from __future__ import annotations


class ExportError(Exception):
    """Base class: the export could not be produced."""


class IncompatibleEnvironmentsError(ExportError):
    """The selected episodes come from environments whose spaces differ."""


class ValueOutOfRangeError(ExportError):
    """A recorded integer does not fit the dtype declared for its feature."""


class InvalidEpisodeError(ExportError):
    """An episode's log or its tags cannot be exported (empty log, bad step range...)."""


class ExportCanceledError(ExportError):
    """The export was canceled; nothing was left in the output folder."""
