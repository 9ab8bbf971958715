"""Which environments can draw a recorded episode's observations again, and with what settings.

An export may regenerate observations by replay (docs/export.md, "Regenerated observations"):
the episode is re-simulated with the settings it was recorded with, except the ones that say
what the observation's images are. An environment can do that only where its settings hold
such knobs, so each catalog entry declares them (:class:`Regenerable`, ``regenerate`` of
``server/runtime/_catalog_data.py``): which setting is the images' side and its range, and
which setting lists the cameras whose images the observation holds, with their names. Nothing
else is guessed, and nothing but the declared settings changes. Imports nothing heavy: the
app checks a request with it, the regeneration process applies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class RegenerationRefused(ValueError):
    """A regeneration an environment cannot do; ``field``: the option it names."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Regenerable:
    """The settings of an environment that regenerate its observation's images."""

    size_setting: str  # the images' side in pixels
    size_range: tuple[int, int]
    cameras_setting: str | None = None  # the cameras whose images the observation holds
    cameras: tuple[str, ...] = ()

    def settings(
        self, env: str, image_size: int | None, cameras: Sequence[str] | None
    ) -> dict[str, Any]:
        """The settings that replace the recorded ones for ``image_size`` and ``cameras``
        (None: as recorded); raises :class:`RegenerationRefused` naming the option."""
        out: dict[str, Any] = {}
        if image_size is not None:
            low, high = self.size_range
            if not low <= image_size <= high:
                raise RegenerationRefused(
                    f"{env} draws images from {low} to {high} px a side, not {image_size}",
                    "image_size",
                )
            out[self.size_setting] = int(image_size)
        if cameras is not None:
            if self.cameras_setting is None:
                raise RegenerationRefused(
                    f"{env} cannot choose the cameras of its observation (it regenerates "
                    "its images at another size only)",
                    "cameras",
                )
            unknown = [c for c in cameras if c not in self.cameras]
            if unknown:
                raise RegenerationRefused(
                    f"{env} has no camera {unknown[0]!r}; its cameras: {', '.join(self.cameras)}",
                    "cameras",
                )
            out[self.cameras_setting] = [c for c in self.cameras if c in cameras]
        return out


def not_regenerable(env: str) -> RegenerationRefused:
    """The refusal for an environment whose settings have no image knobs."""
    return RegenerationRefused(
        f"{env} cannot regenerate its observations: its settings have no image size or camera "
        "set (environments that can: PickCube, Robosuite-PickPlaceCan, Robosuite-Lift)"
    )
