"""What a judge is shown: an item's clips as frames, read from the recorded episodes.

A clip is the step range of an episode an item holds; at most :data:`MAX_FRAMES` of its
steps are shown (every ``stride``-th one of a long clip), as the JPEG the player saw
(``view: frames``) or the recorded observation's image (``view: observation``). Frames are
read on request from the episode's log through the replay's reader cache, one at a time, so
preparing a clip costs a judge's request and nothing else (``benchmarks/bench_feedback.py``).
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


def _observation_jpeg(cache: replay.ReaderCache, log: Path, step: int, version: object) -> bytes:
    """The first image of the recorded observation of ``step``, as JPEG."""
    with cache.reader(log, version) as (reader, length):
        if not 0 <= step < length:
            raise NotFound(GONE)
        observation = reader.steps[step].timestep.observation
    array = replay_step.first_image(observation)
    if array is not None:
        return replay_step.image_jpeg(array)
    raise NotFound("This episode's observation has no image: the study shows frames instead.")


def frame(db: Session, cache: replay.ReaderCache, data_root: Path, spec: FeedbackSpec,
          clip: Clip, index: int) -> bytes:  # fmt: skip
    """Frame ``index`` of ``clip`` as JPEG; 404 (never a 500) when its episode or its log is
    gone."""
    step = clip.step(index)
    episode = db.get(Episode, clip.episode_id)
    if episode is None:
        raise NotFound(GONE)
    try:
        log = review.log_dir(episode, data_root)
        version = (episode.status, episode.steps)
        if spec.view == "observation":
            return _observation_jpeg(cache, log, step, version)
        return replay.frame(cache, log, step, version)
    except NotFound:
        raise
    except (DomainError, OSError, ValueError, RuntimeError) as exc:  # a log deleted meanwhile
        raise NotFound(GONE) from exc
