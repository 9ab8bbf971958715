"""What one step may carry and how its frame is encoded (docs/runtime.md, "Limits on a step")."""

from __future__ import annotations

from typing import Any

import numpy as np
import simplejpeg
import tree

from server.errors import TooLarge

QUALITY = {"low": 50, "medium": 75, "high": 90}
# What one step may carry (docs/runtime.md): a rendered frame of at most MAX_FRAME_SIDE
# pixels a side (a 2048×2048 JPEG is 0.3-4 MB and takes about 15 ms to encode), and an
# observation of at most MAX_OBSERVATION_BYTES (it is recorded every step). Past them the
# environment is refused when it is built for validation, and an episode whose frame grows
# past them ends as failed with this message: never a hang.
MAX_FRAME_SIDE = 2048
MAX_OBSERVATION_BYTES = 32 * 2**20


def checked_frame(frame: np.ndarray) -> np.ndarray:
    """``frame`` if it is within :data:`MAX_FRAME_SIDE`, else :class:`TooLarge`."""
    height, width = frame.shape[:2]
    if height > MAX_FRAME_SIDE or width > MAX_FRAME_SIDE:
        raise TooLarge(f"the environment renders {width}×{height} frames; at most "
                       f"{MAX_FRAME_SIDE}×{MAX_FRAME_SIDE} pixels are allowed")  # fmt: skip
    return frame


def check_observation(observation: Any) -> None:
    """:class:`TooLarge` when ``observation`` (arrays, possibly nested) is over the limit."""
    size = sum(np.asarray(leaf).nbytes for leaf in tree.flatten(observation))
    if size > MAX_OBSERVATION_BYTES:
        raise TooLarge(f"the environment's observation is {size / 2**20:.1f} MiB; at most "
                       f"{MAX_OBSERVATION_BYTES // 2**20} MiB per step are allowed")  # fmt: skip


def encode_jpeg(frame: np.ndarray, quality: int) -> bytes:
    """JPEG bytes of an H×W×3 uint8 frame, 4:2:0 subsampled."""
    return simplejpeg.encode_jpeg(frame, quality=quality, colorspace="RGB", colorsubsampling="420")
