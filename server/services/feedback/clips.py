"""What a judge is shown: an item's clips as frames, read from the recorded episodes.

A clip is the step range of an episode an item holds; at most :data:`MAX_FRAMES` of its
steps are shown (every ``stride``-th one of a long clip), as the JPEG the player saw
(``view: frames``) or the recorded observation's image (``view: observation``). Frames are
read on request from the episode's log through the replay's reader cache: a whole clip in one
pass of its reader for one request (:func:`every_frame`), or one frame (:func:`frame`), so
preparing a clip costs a judge's request and nothing else (``benchmarks/feedback.py``). One
request per clip rather than per frame: each request costs the app about 2.5 ms of CPU
besides its frames (the ticket, the study, the judgement), which a judge's 90 frame requests
an item took from the players beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from server.errors import DomainError, NotFound
from server.models import Episode, FeedbackItem
from server.services.review import replay, replay_step, review
from server.study_spec.feedback import FeedbackSpec

MAX_FRAMES = 300  # frames shown of one clip (a longer one is shown every stride-th step)
GONE = "This clip is no longer available: please take the next item."
NO_IMAGE = "This episode's observation has no image: the study shows frames instead."


@dataclass(frozen=True)
class Clip:
    episode_id: str
    first: int  # inclusive steps
    last: int

    @property
    def stride(self) -> int:
        return max(1, math.ceil((self.last - self.first + 1) / MAX_FRAMES))

    @property
    def frames(self) -> int:
        return math.ceil((self.last - self.first + 1) / self.stride)

    def step(self, index: int) -> int:
        """The recorded step shown as frame ``index`` (404 outside the clip)."""
        if not 0 <= index < self.frames:
            raise NotFound(f"No frame {index}: this clip has frames 0..{self.frames - 1}.")
        return self.first + index * self.stride


def clips(item: FeedbackItem) -> list[Clip]:
    """The item's clips: one, or two for a compare item (in the item's a, b order)."""
    out = [Clip(item.episode_a, item.a_start, item.a_end)]
    if item.episode_b is not None:
        assert item.b_start is not None and item.b_end is not None
        out.append(Clip(item.episode_b, item.b_start, item.b_end))
    return out


def shown(item: FeedbackItem, swapped: bool) -> list[Clip]:
    """The clips as the judge sees them, left first."""
    found = clips(item)
    return found[::-1] if swapped and len(found) == 2 else found


def _jpegs(cache: replay.ReaderCache, log: Path, steps: list[int], version: object,
           view: str) -> list[bytes]:  # fmt: skip
    """The JPEGs of ``steps`` of one log in one pass of its cached reader (the reader's lock
    held once): the frame the player saw (b"" where a step was recorded without one), or
    the first image of the recorded observation."""
    out: list[bytes] = []
    with cache.reader(log, version) as (reader, length):
        if any(not 0 <= step < length for step in steps):
            raise NotFound(GONE)  # the log is shorter than the item: not the recording it was
        for step in steps:
            recorded = reader.steps[step]
            if view != "observation":
                out.append(replay.saw(recorded))
                continue
            array = replay_step.first_image(recorded.timestep.observation)
            if array is None:
                raise NotFound(NO_IMAGE)
            out.append(replay_step.image_jpeg(array))
    return out


def _read(db: Session, cache: replay.ReaderCache, data_root: Path, spec: FeedbackSpec,
          clip: Clip, steps: list[int]) -> list[bytes]:  # fmt: skip
    """The JPEGs of ``steps`` of ``clip``'s episode; 404 (never a 500) when the episode or
    its log is gone."""
    episode = db.get(Episode, clip.episode_id)
    if episode is None:
        raise NotFound(GONE)
    try:
        log = review.log_dir(episode, data_root)
        return _jpegs(cache, log, steps, (episode.status, episode.steps), spec.view)
    except NotFound:
        raise
    except (DomainError, OSError, ValueError, RuntimeError) as exc:  # a log deleted meanwhile
        raise NotFound(GONE) from exc


def frame(db: Session, cache: replay.ReaderCache, data_root: Path, spec: FeedbackSpec,
          clip: Clip, index: int) -> bytes:  # fmt: skip
    """Frame ``index`` of ``clip`` as JPEG (404 when the step was recorded without one)."""
    step = clip.step(index)
    (jpeg,) = _read(db, cache, data_root, spec, clip, [step])
    if not jpeg:
        raise NotFound(f"Step {step} has no frame.")
    return jpeg


def every_frame(db: Session, cache: replay.ReaderCache, data_root: Path, spec: FeedbackSpec,
                clip: Clip) -> list[bytes]:  # fmt: skip
    """Every frame of ``clip`` as JPEG, in order, read in one pass (b"" for a step recorded
    without a frame: the per-frame route's 404)."""
    return _read(db, cache, data_root, spec, clip, [clip.step(i) for i in range(clip.frames)])
