"""The export request's check: the one function that says whether an export may run.

The API calls it before it queues a job (its 422s name the field, :class:`RequestError`), the
runner's claim calls it again through the same service when it rebuilds the job, and the
export's run (:func:`server.export.run.export_dataset`) calls it for whoever calls the library
directly. What the chosen format cannot hold is its own check (:meth:`Format.check`), made on
the episodes' specs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from server.export import registry
from server.export.base import EpisodeInput, ExportOptions
from server.export.errors import ExportError, InvalidEpisodeError

EPISODE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")


class RequestError(ExportError):
    """An export request refused; ``field``: the option it names (``""``: the selection)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def check_dataset_name(name: str, version: str) -> None:
    """Raise unless ``name`` is a dataset name (snake_case) and ``version`` x.y.z."""
    if not _NAME_RE.match(name):
        raise RequestError(f"dataset name {name!r} must be snake_case: a-z, 0-9 and _", "name")
    if not _VERSION_RE.match(version):
        raise RequestError(f"dataset version {version!r} must look like 1.0.0", "name")


def check_request(episodes: Sequence[EpisodeInput], options: ExportOptions) -> registry.Format:
    """The format that writes ``options``, once the request is checked: episodes selected,
    each once and with a safe id; a registered format; a profile that format has; a dataset
    name; Beam only for a format that runs on it."""
    if not episodes:
        raise RequestError("no episode selected")
    fmt = registry.get(options.format)
    if options.profile and options.profile not in fmt.profiles:
        if options.profile not in registry.profile_names():
            known = ", ".join(registry.profile_names())
            raise RequestError(f"unknown profile {options.profile!r}; profiles: {known}", "profile")
        raise RequestError(
            f"the {options.profile} profile applies to the "
            f"{' or '.join(registry.with_profiles())} format only",
            "profile",
        )
    check_dataset_name(options.name, options.version)
    if options.beam is not None and not fmt.on_beam:
        raise RequestError(
            f"the {options.format} format is written in one process, not on Beam", "engine"
        )
    seen: set[str] = set()
    for ep in episodes:
        if not EPISODE_ID_RE.match(ep.episode_id):
            raise InvalidEpisodeError(f"episode id {ep.episode_id!r} is not a safe identifier")
        if ep.episode_id in seen:
            raise InvalidEpisodeError(f"episode {ep.episode_id} is selected twice")
        seen.add(ep.episode_id)
        ep.judgements.check(ep.episode_id)
    return fmt
