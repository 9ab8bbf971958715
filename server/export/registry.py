"""The export formats, by name: the one place that knows which formats there are.

Each format is one folder of server/export/formats/ (a package) whose ``__init__`` defines a
:class:`Format` subclass decorated with ``@register``. On its first look-up the registry imports
every package it finds in server/export/formats/, so adding a format is adding its folder and
nothing else: the API's and the CLI's format choices, the services' checks, profiles and Beam
support all come from here.
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from server.export.card import option_lines
from server.export.errors import ExportError

if TYPE_CHECKING:
    from server.export.base import ExportOptions, ExportResult
    from server.export.episode import EnvSpecs
    from server.export.loop import WriteJob

FORMATS_PACKAGE = "server.export.formats"  # every package in it is imported on the first look-up
_formats: dict[str, Format] = {}
_loaded = False  # True once the formats' folders were imported


class Format(ABC):
    """One export format: what it checks before the job, how it writes, what the card says."""

    name: str  # the API's and the CLI's name of the format
    label = ""  # the card's "Format:" line (default: the name)
    summary = ""  # one phrase for the API's list of formats
    position = 100  # the place among the choices (the first is the default)
    on_beam = False  # may run as an Apache Beam pipeline (ExportOptions.beam)
    profiles: Mapping[str, str] = {}  # its profiles (ExportOptions.profile): name -> summary
    # environments with different spaces are written one folder each without being asked
    splits_by_env = False
    # it writes the steps as read (a dataset's trims applied); False: it copies the logs
    applies_trims = True
    card_metadata = ""  # what the card calls the step metadata (kept or stripped)
    card_tags = ""  # what the card says the step tags become

    def check(self, specs: EnvSpecs, options: ExportOptions, tag_names: Sequence[str]) -> None:
        """Refuse, naming the field, what the format cannot hold (before any writing)."""
        return None  # a format that holds every spec the recorder records

    @abstractmethod
    def write(self, job: WriteJob) -> ExportResult:
        """Write the job's episodes into ``job.out`` (``job.each_episode``: the writer loop,
        with progress and cancel)."""

    def card_lines(self, options: ExportOptions, tag_names: Sequence[str]) -> list[str]:
        """The card's "Export options" lines: the step metadata kept or stripped, the step
        tags (:attr:`card_metadata`, :attr:`card_tags`) and the end tags."""
        return option_lines(options, tag_names, metadata=self.card_metadata, tags=self.card_tags)

    def data_path(self, options: ExportOptions) -> str:
        """Where the dataset is inside the export, as the card's loading snippet names it."""
        return f"{options.name}/{options.version}"

    @abstractmethod
    def loading(self, data_path: str) -> str:
        """The card's "Loading" section (markdown)."""

    def split_loading(self, options: ExportOptions, splits: Sequence[str]) -> str:
        """What the card's "Loading" section adds for a dataset's export with ``splits``
        (markdown: where each split is and the lines that load one)."""
        return ""


def register(cls: type[Format]) -> type[Format]:
    """Class decorator: make the format available under its ``name``."""
    if cls.name in _formats:
        raise ValueError(f"two export formats are named {cls.name!r}")
    _formats[cls.name] = cls()
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = importlib.import_module(FORMATS_PACKAGE)
    for found in pkgutil.iter_modules(package.__path__):
        if found.ispkg:
            importlib.import_module(f"{FORMATS_PACKAGE}.{found.name}")


def get(name: str) -> Format:
    """The format registered under ``name``; an ExportError naming the known ones if none."""
    _load()
    try:
        return _formats[name]
    except KeyError:
        known = ", ".join(sorted(_formats))
        raise ExportError(f"unknown export format {name!r}; formats: {known}") from None


def formats() -> list[Format]:
    """The registered formats, in the order the API lists them (the default first)."""
    _load()
    return sorted(_formats.values(), key=lambda f: (f.position, f.name))


def names() -> list[str]:
    """The registered formats' names, in the order the API lists them (the default first)."""
    return [f.name for f in formats()]


def default() -> str:
    """The format an export is written in when none is named."""
    return names()[0]


def with_profiles() -> list[str]:
    """The formats that have profiles."""
    return [f.name for f in formats() if f.profiles]


def on_beam() -> list[str]:
    """The formats that may run as an Apache Beam pipeline."""
    return [f.name for f in formats() if f.on_beam]


def profile_names() -> list[str]:
    """Every format's profiles' names, each once."""
    return list(dict.fromkeys(p for f in formats() for p in f.profiles))
