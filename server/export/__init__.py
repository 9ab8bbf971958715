"""Exporting recorded episodes as RLDS (TFDS) datasets, Minari, LeRobot or envlogger logs,
without TensorFlow.

Entry point: :func:`export_dataset`; see docs/export.md for the formats and their options.
Shared types are in :mod:`server.export.base`, the formats in :mod:`server.export.formats`
(looked up through :mod:`server.export.registry`).
"""

from server.export.base import EpisodeInput, ExportFormat, ExportOptions, ExportResult
from server.export.card import EpisodeSummary
from server.export.errors import (
    ExportCanceledError,
    ExportError,
    IncompatibleEnvironmentsError,
    InvalidEpisodeError,
    ValueOutOfRangeError,
)
from server.export.export_job import check_compatible, export_dataset
from server.export.packaging import make_archive
from server.export.tags import StepTag

__all__ = [
    "EpisodeInput",
    "EpisodeSummary",
    "ExportCanceledError",
    "ExportError",
    "ExportFormat",
    "ExportOptions",
    "ExportResult",
    "IncompatibleEnvironmentsError",
    "InvalidEpisodeError",
    "StepTag",
    "ValueOutOfRangeError",
    "check_compatible",
    "export_dataset",
    "make_archive",
]
