"""What the environments of server/envs/ share about their observation images."""

from __future__ import annotations

import numpy as np

_PLACEHOLDERS: dict[int, np.ndarray] = {}


def placeholder(size: int) -> np.ndarray:
    """A deferred image (``defer_images``): zeros of an observation image's shape, read-only
    and shared."""
    found = _PLACEHOLDERS.get(size)
    if found is None:
        found = _PLACEHOLDERS[size] = np.zeros((size, size, 3), dtype=np.uint8)
        found.flags.writeable = False
    return found
