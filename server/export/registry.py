"""The export formats, by name: each format is one module of :mod:`server.export.formats`
that registers itself here (``@register``); the job runner looks formats up by name.

Adding a format: a new module in server/export/formats/ with a :class:`Format` subclass
decorated with ``@register``, and its line in server/export/formats/__init__.py.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Sequence

from server.export.base import ExportOptions, ExportResult, WriteJob
from server.export.episode import EnvSpecs
from server.export.errors import ExportError

FORMATS_PACKAGE = "server.export.formats"  # imported on the first look-up: it registers all
_formats: dict[str, Format] = {}


class Format(ABC):
    """One export format: what it checks before the job, how it writes, what the card says."""

    name: str
    on_beam = False  # may run as an Apache Beam pipeline (ExportOptions.beam)
    profiles = False  # has profiles (ExportOptions.profile)

    def check(self, specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str]) -> None:
        """Refuse, naming the field, what the format cannot hold (before any writing)."""
        return None  # a format that holds every spec the recorder records

    @abstractmethod
    def write(self, job: WriteJob) -> ExportResult:
        """Write the job's episodes into ``job.out`` (``job.each_episode``: the writer loop,
        with progress and cancel)."""

    @abstractmethod
    def card_lines(self, options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
        """The card's "Export options" lines."""

    @abstractmethod
    def data_path(self, options: ExportOptions) -> str:
        """Where the dataset is inside the export, as the card's loading snippet names it."""

    @abstractmethod
    def loading(self, data_path: str) -> str:
        """The card's "Loading" section (markdown)."""


def register(cls: type[Format]) -> type[Format]:
    """Class decorator: make the format available under its ``name``."""
    if cls.name in _formats:
        raise ValueError(f"two export formats are named {cls.name!r}")
    _formats[cls.name] = cls()
    return cls


def _load() -> None:
    if not _formats:
        importlib.import_module(FORMATS_PACKAGE)


def get(name: str) -> Format:
    """The format registered under ``name``; an ExportError naming the known ones if none."""
    _load()
    try:
        return _formats[name]
    except KeyError:
        raise ExportError(
            f"unknown export format {name!r}; formats: {', '.join(names())}"
        ) from None


def names() -> list[str]:
    """The registered formats' names."""
    _load()
    return sorted(_formats)
