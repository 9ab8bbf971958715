"""Replay of recorded episodes: the JPEG frame, everything recorded per step, a reward profile.

Logs are read with ``envlogger.Reader`` (``recording.writer.open_reader``); readers are kept
in a small LRU per episode so scrubbing through a replay does not reopen the log for each
frame. Step ``t`` is the RLDS step holding observation o_t: its frame is the one recorded
with timestep t, its action and reward come from timestep t+1 (see server/export/episode.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from server.errors import Invalid, NotFound
from server.recording.writer import open_reader
from server.services.review import replay_step as step

CACHE_SIZE = 16  # open readers (a reader holds a file handle and a small index)
MAX_STEPS_PAGE = 1000
MAX_BUCKETS = 4000  # reward profile buckets (about one per pixel of a wide chart)
# Frame-drawn times of step t arrive in the ``acks`` of later timing records (when the
# browser reports them): a page reads this many timesteps past its end to find them.
ACK_LOOKAHEAD = 32


class _Entry:
    def __init__(self, reader: Any, version: Any) -> None:
        self.reader = reader
        self.version = version
        self.lock = threading.Lock()
        self.length = len(reader.steps)


class ReaderCache:
    """An LRU of open envlogger readers, one per log folder.

    ``version`` should change whenever the log may have grown (e.g. the episode's step
    count): a reader opened at another version is closed and the log opened again, so a
    reader opened while an episode was recording is not served forever.
    """

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        # per-step rewards of recently charted logs, by (log folder, version)
        self.rewards: OrderedDict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()

    @contextmanager
    def reader(self, log_dir: Path, version: Any = None) -> Iterator[tuple[Any, int]]:
        """Yield ``(reader, number of recorded timesteps)``, holding that reader's lock."""
        key = str(log_dir)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.version == version:
                self._entries.move_to_end(key)
            else:
                entry = None
        if entry is None:
            opened = self._open(log_dir, version)
            unused: _Entry | None
            with self._lock:
                current = self._entries.pop(key, None)
                if current is not None and current.version == version:
                    entry, unused = current, opened  # a concurrent request opened it first
                else:
                    entry, unused = opened, current
                self._entries[key] = entry
                while len(self._entries) > self.size:
                    _close(self._entries.popitem(last=False)[1])
            if unused is not None:
                _close(unused)
        with entry.lock:
            yield entry.reader, entry.length

    def _open(self, log_dir: Path, version: Any) -> _Entry:
        if not Path(log_dir).is_dir():
            raise NotFound("The episode's log is missing.")
        try:
            return _Entry(open_reader(log_dir), version)
        except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors
            raise NotFound(f"The episode's log cannot be read ({exc}).") from exc

    def close(self) -> None:
        """Close every cached reader."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            self.rewards.clear()
        for entry in entries:
            _close(entry)


def _close(entry: _Entry) -> None:
    with entry.lock:
        entry.reader.close()


def saw(recorded: Any) -> bytes:
    """The JPEG the player saw at this recorded step (b"" when it was recorded without one)."""
    return bytes((recorded.custom_data or {}).get("frame") or b"")


def frame(cache: ReaderCache, log_dir: Path, step: int, version: Any = None) -> bytes:
    """The JPEG bytes the player saw at step ``step``."""
    with cache.reader(log_dir, version) as (reader, length):
        if not 0 <= step < length:
            raise NotFound(f"No step {step}: the episode has steps 0..{length - 1}.")
        jpeg = saw(reader.steps[step])
    if not jpeg:
        raise NotFound(f"Step {step} has no frame.")
    return jpeg


def _plain(value: Any) -> Any:
    """A JSON-friendly copy of an action (nested dicts of arrays)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if value is None:
        return None
    array = np.asarray(value)
    if array.size > 32:
        return f"array{list(array.shape)}"
    return array.tolist()


def _check_page(start: int, limit: int) -> None:
    if start < 0 or not 1 <= limit <= MAX_STEPS_PAGE:
        raise Invalid(
            f"start must be >= 0 and limit 1..{MAX_STEPS_PAGE}.",
            detail=[{"loc": ["query", "limit"], "msg": f"1..{MAX_STEPS_PAGE}"}],
        )


def _env_config(reader: Any) -> str | None:
    meta = reader.metadata() or {}
    config = meta.get("env_config")
    return config if isinstance(config, str) else None


def steps_page(
    cache: ReaderCache, log_dir: Path, start: int, limit: int, version: Any = None
) -> dict[str, Any]:
    """Everything recorded for steps ``start .. start+limit-1`` (RLDS alignment, see above).

    Only the page's timesteps (and :data:`ACK_LOOKAHEAD` after it, whose timing records
    carry the page's frame-drawn times) are read: any page of a long episode costs the same.
    """
    _check_page(start, limit)
    items: list[dict[str, Any]] = []
    with cache.reader(log_dir, version) as (reader, length):
        controls = step.controls_of(_env_config(reader))
        steps = reader.steps
        stop = min(length, start + limit)
        timings = [
            step.parse_json((steps[t].custom_data or {}).get("timing"), {})
            for t in range(start, min(length, stop + ACK_LOOKAHEAD))
        ]
        drawn = step.frame_drawn_times([t for t in timings if isinstance(t, dict)])
        for t in range(start, stop):
            cur = steps[t]
            nxt = steps[t + 1] if t + 1 < length else None
            data = cur.custom_data or {}
            ts = cur.timestep
            raw = None if nxt is None else step.parse_json((nxt.custom_data or {}).get("input"))
            action = None if nxt is None else _plain(nxt.action)
            timing = timings[t + 1 - start] if t + 1 < start + len(timings) else {}
            sent = timing.get("input_sent") if isinstance(timing, dict) else None
            own = timings[t - start] if isinstance(timings[t - start], dict) else {}
            items.append(
                {
                    "step": t,
                    "observation": step.describe_observation(ts.observation),
                    "action": action,
                    "action_meaning": None
                    if nxt is None
                    else step.action_meaning(controls, raw, nxt.action),
                    "input": raw,
                    "reward": 0.0 if nxt is None else float(np.sum(nxt.timestep.reward)),
                    "discount": 0.0 if nxt is None else float(np.mean(nxt.timestep.discount)),
                    "is_first": t == 0,
                    "is_last": nxt is None,
                    "is_terminal": bool(nxt is None and ts.last() and ts.discount == 0.0),
                    "info": step.parse_json(data.get("info"), {}),
                    "latency_ms": step.input_latency(sent, drawn.get(t + 1)),
                    "latency_note": step.latency_note(sent, drawn.get(t + 1)),
                    # when the worker produced o_t (ms since the epoch): the replay's pace
                    "time_ms": step.finite(own.get("applied")),
                    # the JPEG quality o_t's frame was streamed at (the adaptive stream's)
                    "stream_quality": own.get("jpeg_quality"),
                    # the adaptive stream's frame rate: every n-th frame sent (None: every one)
                    "stream_every": own.get("stream_every"),
                    "streamed": own.get("streamed", True),
                    # the camera o_t's frame was rendered from (environments with several)
                    "camera": own.get("camera"),
                    # async: the clock's speed factor the step was played at (1 = the fps)
                    "speed": own.get("speed"),
                    "has_frame": bool(data.get("frame")),
                    # shared autonomy: who chose this step's action, what each proposed
                    "control": None
                    if nxt is None
                    else step.parse_json((nxt.custom_data or {}).get("control")),
                }
            )
    return {"start": start, "total": length, "items": items}


def observation(
    cache: ReaderCache, log_dir: Path, t: int, key: str, version: Any = None
) -> np.ndarray:
    """One array of the observation of step ``t`` (``key`` names it inside a dict)."""
    with cache.reader(log_dir, version) as (reader, length):
        if not 0 <= t < length:
            raise NotFound(f"No step {t}: the episode has steps 0..{length - 1}.")
        array = step.observation_leaf(reader.steps[t].timestep.observation, key)
    if array is None:
        raise NotFound(f"The observation has no array {key!r}.")
    return np.array(array)


def _rewards(cache: ReaderCache, log_dir: Path, version: Any) -> tuple[np.ndarray, np.ndarray]:
    """r_0 .. r_{T-1} and the last step's 0 (see the module doc), and who chose each step's
    action (shared autonomy: 0 the player, 1 the policy, -1 no policy), cached per log
    version."""
    key = (str(log_dir), repr(version))
    with cache._lock:
        cached = cache.rewards.get(key)
        if cached is not None:
            cache.rewards.move_to_end(key)
            return cached
    # A reader of its own: reading every step takes a while (~0.2 ms a step), and the
    # cached reader must keep serving frames and step pages meanwhile.
    reader = cache._open(log_dir, version).reader
    try:
        length = len(reader.steps)
        out = np.zeros(length, dtype=np.float64)
        control = np.full(length, -1, dtype=np.int8)
        # r_t is recorded with timestep t+1; iterating decodes each step once, in order
        for t, recorded in enumerate(reader.steps):
            if 1 <= t < length:
                out[t - 1] = float(np.sum(recorded.timestep.reward))
                control[t - 1] = step.control_source((recorded.custom_data or {}).get("control"))
    finally:
        reader.close()
    with cache._lock:
        cache.rewards[key] = (out, control)
        while len(cache.rewards) > cache.size:
            cache.rewards.popitem(last=False)
    return out, control


def control_runs(control: np.ndarray) -> list[list[Any]] | None:
    """``[first step, last step, "human" | "policy"]`` runs of who drove (None: no policy)."""
    if not (control >= 0).any():
        return None
    runs: list[list[Any]] = []
    edges = np.flatnonzero(np.diff(control)) + 1
    for a, b in zip([0, *edges], [*edges, control.size], strict=True):
        if control[a] >= 0:
            runs.append([int(a), int(b) - 1, "policy" if control[a] == 1 else "human"])
    return runs


def reward_profile(
    cache: ReaderCache, log_dir: Path, buckets: int, version: Any = None
) -> dict[str, Any]:
    """Per-step reward and return, downsampled to at most ``buckets`` buckets of steps.

    Each bucket keeps its first, smallest, largest and last point (in step order), so a
    one-step spike survives any downsampling. The per-step rewards of a log are read once
    and cached (8 bytes a step) beside its reader.
    """
    if not 1 <= buckets <= MAX_BUCKETS:
        raise Invalid(
            f"buckets must be 1..{MAX_BUCKETS}.",
            detail=[{"loc": ["query", "buckets"], "msg": f"1..{MAX_BUCKETS}"}],
        )
    rewards, control = _rewards(cache, log_dir, version)
    returns = np.cumsum(rewards)
    return {
        "total": int(rewards.size),
        "return": float(returns[-1]) if rewards.size else 0.0,
        "reward": _downsample(rewards, buckets),
        "cumulative": _downsample(returns, buckets),
        "control": control_runs(control),
    }


def _downsample(values: np.ndarray, buckets: int) -> list[list[float]]:
    """``[step, value]`` of each bucket's first, smallest, largest and last point."""
    n = values.size
    if n == 0:
        return []
    width = -(-n // buckets)  # steps per bucket, rounded up
    rows = -(-n // width)
    padded = np.full(rows * width, np.nan)
    padded[:n] = values
    grid = padded.reshape(rows, width)
    starts = np.arange(rows) * width
    keep = np.concatenate(
        [
            starts,
            starts + np.nanargmin(grid, axis=1),
            starts + np.nanargmax(grid, axis=1),
            np.minimum(starts + width - 1, n - 1),
        ]
    )
    steps = np.unique(keep)
    return [[int(t), float(values[t])] for t in steps]
