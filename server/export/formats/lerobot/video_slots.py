"""A LeRobot export's video features, one episode at a time: the frames decoded, their pixel
counts, and the episode encoded on an encoder slot, in the export's worker threads
(server/export/formats/lerobot/writer.py muxes the episodes in order).

Episode ``i`` is encoded on slot ``i % SLOTS`` of its feature (a :class:`video.FrameEncoder`
each). The export runs at most :data:`SLOTS` threads, and ``WriteJob.each_encoded`` has at
most as many consecutive episodes in flight: a slot's episodes are encoded one after
another, in the episodes' order, whatever the threads, so the bytes are the same with any
number of threads. An encoder per slot rather than per episode: opening an x264 encoder
costs about 3 ms of CPU (docs/performance.md, "Exports, continued").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from server.export import video
from server.export.episode import RldsEpisode
from server.export.errors import ExportError
from server.export.formats.lerobot import dataset as fmt
from server.export.formats.lerobot.stats import frames_pixel_counts

SLOTS = 4  # encoders per video feature, and the export's threads at most


def leaf(value: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in nested dicts."""
    for key in path:
        value = value[key]
    return value


@dataclass(frozen=True)
class EpisodeVideo:
    """One episode's frames of a video feature, encoded before its turn to be written."""

    shape: tuple[int, ...]  # its first frame's
    other: tuple[int, tuple[int, ...]] | None  # the first step whose frame differs, its shape
    encoded: video.EncodedFrames | None  # None where the frames' sizes differ
    counts: np.ndarray  # the frames' pixel counts (3 x 256)


def frames(col: fmt.Column, episode: RldsEpisode) -> list[np.ndarray]:
    """A video feature's frames of one episode, H x W x 3 uint8 (the player's frames are
    their JPEGs decoded)."""
    if col.source == "frame":
        out = []
        for t, data in enumerate(episode.frames):
            if not data:
                raise ExportError(f"step {t}: no frame was recorded (strip step metadata)")
            out.append(video.decode_jpeg(data))
        return out
    return [video.as_rgb(np.asarray(leaf(o, col.path))) for o in episode.observations]


class VideoSlots:
    """The encoder slots of an export's video features (see the module doc)."""

    def __init__(self) -> None:
        self._encoders: dict[tuple[str, int], video.FrameEncoder] = {}

    def encode(self, i: int, col: fmt.Column, episode: RldsEpisode) -> EpisodeVideo:
        """Episode ``i``'s frames of ``col``: decoded, counted and encoded on its slot."""
        decoded = frames(col, episode)
        shape = decoded[0].shape
        other = next(((t, f.shape) for t, f in enumerate(decoded) if f.shape != shape), None)
        slot = (col.name, i % SLOTS)
        encoder = self._encoders.get(slot) or self._encoders.setdefault(
            slot, video.FrameEncoder(shape[1], shape[0], video.LOSSLESS)
        )
        encoded = None
        if not other and (encoder.height, encoder.width) == shape[:2]:  # else refused later
            encoded = encoder.encode(decoded, video.step_times_ms(episode.observed_ms))
        return EpisodeVideo(shape, other, encoded, frames_pixel_counts(decoded))
