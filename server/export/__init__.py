"""Exporting recorded episodes as RLDS (TFDS) datasets, Minari, LeRobot or envlogger logs,
without TensorFlow.

Entry point: :func:`export_dataset`; see docs/export.md for the formats and their options.
Shared types are in :mod:`server.export.base`, the formats in :mod:`server.export.formats`,
one folder each (looked up through :mod:`server.export.registry`).
"""

from server.export.base import EpisodeInput, ExportOptions, ExportResult
from server.export.errors import (
    ExportCanceledError,
    ExportError,
    IncompatibleEnvironmentsError,
    InvalidEpisodeError,
)
from server.export.narration import NarratedSpan
from server.export.packaging import make_archive
from server.export.run import check_compatible, export_dataset
from server.export.tags import TaggedSpan

__all__ = [
    "EpisodeInput",
    "ExportCanceledError",
    "ExportError",
    "ExportOptions",
    "ExportResult",
    "IncompatibleEnvironmentsError",
    "InvalidEpisodeError",
    "NarratedSpan",
    "TaggedSpan",
    "check_compatible",
    "export_dataset",
    "make_archive",
]
