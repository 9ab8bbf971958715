"""Replay of recorded episodes: the JPEG frame of a step and per-step summaries.

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

CACHE_SIZE = 16  # open readers (a reader holds a file handle and a small index)
MAX_STEPS_PAGE = 1000


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
        for entry in entries:
            _close(entry)


def _close(entry: _Entry) -> None:
    with entry.lock:
        entry.reader.close()


def frame(cache: ReaderCache, log_dir: Path, step: int, version: Any = None) -> bytes:
    """The JPEG bytes the player saw at step ``step``."""
    with cache.reader(log_dir, version) as (reader, length):
        if not 0 <= step < length:
            raise NotFound(f"No step {step}: the episode has steps 0..{length - 1}.")
        data = reader.steps[step].custom_data or {}
    jpeg = data.get("frame")
    if not jpeg:
        raise NotFound(f"Step {step} has no frame.")
    return bytes(jpeg)


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


def steps_summary(
    cache: ReaderCache, log_dir: Path, start: int, limit: int, version: Any = None
) -> dict[str, Any]:
    """Action, reward and flags of steps ``start .. start+limit-1`` for a timeline."""
    if start < 0 or not 1 <= limit <= MAX_STEPS_PAGE:
        raise Invalid(
            f"start must be >= 0 and limit 1..{MAX_STEPS_PAGE}.",
            detail=[{"loc": ["query", "limit"], "msg": f"1..{MAX_STEPS_PAGE}"}],
        )
    items: list[dict[str, Any]] = []
    with cache.reader(log_dir, version) as (reader, length):
        steps = reader.steps
        stop = min(length, start + limit)
        for t in range(start, stop):
            nxt = steps[t + 1] if t + 1 < length else None
            ts = steps[t].timestep
            items.append(
                {
                    "step": t,
                    "action": None if nxt is None else _plain(nxt.action),
                    "reward": 0.0 if nxt is None else float(np.sum(nxt.timestep.reward)),
                    "is_first": t == 0,
                    "is_last": nxt is None,
                    "is_terminal": bool(nxt is None and ts.last() and ts.discount == 0.0),
                }
            )
    return {"start": start, "total": length, "items": items}
