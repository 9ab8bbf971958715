"""Per-episode envlogger (Riegeli) writer used inside an environment worker.

One :class:`EpisodeWriter` records one episode of a dm_env environment to
``episode_dir(data_root, study_id, episode_id)`` with the log-level metadata and per-step
metadata of :mod:`server.recording.format`. Each step is in the episode's step journal
(:mod:`server.recording.journal`, handed to the operating system) before :meth:`step`
returns, so before its frame is sent; the log is flushed (fsync) at least every
``flush_interval_s`` (and on :meth:`EpisodeWriter.flush`). A worker killed with SIGKILL
leaves a readable log that lacks at most the last :data:`MAX_LOSS_S` of steps, which
:func:`server.recording.recovery.recover` adds back from the journal (``docs/runtime.md``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dm_env
import numpy as np

from server.recording import codec, flush_thread
from server.recording import format as fmt
from server.recording.envlogger_log import (
    environment_logger,
    envlogger,
    riegeli_backend_writer,
    step_data,
)
from server.recording.journal import Journal

# Measured on Pong (benchmarks/step_overhead.py): zstd:1 keeps ~1 KiB/step like the default
# "transpose,brotli:6,chunk_size:1M" at the same median step time, without brotli's
# tens-of-ms stall each time a 1 MB chunk is compressed (a visible hitch at 30 fps).
WRITER_OPTIONS = "zstd:1,chunk_size:256K"

# A worker flushes once the last flush is FLUSH_INTERVAL_S old (after writing a step, or
# woken when idle); an env step in progress delays that by the step. With steps (step +
# render + encode) under 50 ms, a SIGKILL leaves a log lacking at most the last MAX_LOSS_S
# of play, which the step journal holds. A flush is envlogger's fsync of two files, ~10 ms
# whatever it holds (benchmarks/step_overhead.py), so flushing every step before its reply
# is not an option; the journal's write without fsync is.
FLUSH_INTERVAL_S = 0.2
MAX_LOSS_S = 0.25

StepFn = Callable[[dm_env.TimeStep, Any, dm_env.Environment], dict[str, Any]]


def to_json(value: Any) -> str:
    """JSON text of ``value``; anything JSON cannot hold becomes its ``repr``."""
    return json.dumps(value, default=_jsonable, separators=(",", ":"), allow_nan=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.size <= 64:
        return value.tolist()
    return repr(value)


def info_json(info: Mapping[str, Any] | None) -> str:
    """JSON text of an env ``info`` dict (non-JSON values, NaN included, as ``repr``)."""
    try:
        return to_json(dict(info or {}))
    except ValueError:  # NaN / inf inside
        return json.dumps({str(k): repr(v) for k, v in (info or {}).items()})


def episode_metadata(
    *, episode_id: str, study_id: int | str, env_id: str, env_config: str, seed: int | None
) -> dict[str, Any]:
    """Log-level metadata with exactly :data:`format.EPISODE_METADATA_KEYS`."""
    meta = {
        "format_version": fmt.FORMAT_VERSION,
        "episode_id": episode_id,
        "study_id": str(study_id),
        "env_id": env_id,
        "env_config": env_config,
        "seed": -1 if seed is None else int(seed),
    }
    assert tuple(meta) == fmt.EPISODE_METADATA_KEYS
    return meta


class _TimedFlush:
    """envlogger flush scheduler: flush the first step, then whenever ``interval`` passed."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.last = float("-inf")

    def __call__(self, _data: Any) -> bool:
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            return True
        return False


class _Backend(riegeli_backend_writer.RiegeliBackendWriter):
    """The Riegeli backend with deferred records, a public ``flush``, idempotent ``close``.

    A step is encoded (envlogger's ``Data`` message) as it is recorded. With ``defer`` set,
    steps are kept until :meth:`commit` so the worker can reply to the player first and
    write the step right after. With ``journal`` set, every step is first written to the
    episode's step journal (:mod:`server.recording.journal`), which starts again after each
    flush. With ``background`` set, a due flush (its ``fsync``, 2-20 ms) runs in a thread of
    its own while the worker keeps stepping: steps recorded meanwhile wait in :attr:`pending`
    (they are in the journal) and are written after it.
    """

    def __init__(self, *, journal: bool = False, background: bool = False, **kwargs: Any) -> None:
        self._closed = False
        self.defer = False
        self.dirty = False  # records written since the last flush
        # (encoded step, is_new, its journal record's parts)
        self.pending: list[tuple[Any, bool, Sequence[bytes]]] = []
        self.flusher = _Flusher(self) if background else None
        super().__init__(**kwargs)
        self.journal = Journal(kwargs["data_directory"], self._metadata) if journal else None

    def _record_step(self, data: Any, is_new_episode: bool) -> None:
        # envlogger's own _record_step, with the step serialized by our codec (the bytes of
        # envlogger's message, written without building it); they are a copy of the step's
        # arrays (an environment may reuse them), journaled and written as they are.
        encoded = codec.Serialized(codec.serialize(data))
        journal = self.journal
        parts = journal.append(encoded, is_new_episode) if journal is not None else ()
        if self.defer or self.flusher is not None:
            self.pending.append((encoded, is_new_episode, parts))
            if not self.defer:
                self.commit()
        else:
            self.write_encoded(encoded, is_new_episode)

    def write_encoded(self, encoded: Any, is_new_episode: bool) -> None:
        """Write one encoded step to the log now (the journal is not involved)."""
        if not self._data_writer.add_step(encoded, is_new_episode):
            raise RuntimeError("envlogger could not write the step")
        if self._flush_scheduler(encoded):
            flusher = self._background()
            if flusher is None:
                self._flushed()
                self.dirty = False
                return
            flusher.start()
        self.dirty = True

    def _background(self) -> _Flusher | None:
        """The flusher to start a flush in, or None to flush in place: there is none, or the
        interpreter is ending (a writer closed by its ``__del__`` then would wait forever for
        a new thread to start)."""
        return None if sys.is_finalizing() else self.flusher

    def _flushed(self) -> None:
        self._data_writer.flush()
        if self.journal is not None:
            self.journal.restart(keep=[step[2] for step in self.pending])

    def commit(self, wait: bool = False) -> None:
        """Write the pending steps; without ``wait``, not while a background flush runs."""
        flusher = self.flusher
        while self.pending and not self._closed:
            if flusher is not None and not flusher.settle(wait):
                return  # a flush runs: the steps are written after it
            encoded, is_new_episode, _ = self.pending.pop(0)
            self.write_encoded(encoded, is_new_episode)
        if wait and flusher is not None:
            flusher.settle(True)

    def flush(self) -> None:
        """Everything recorded so far is durable when this returns."""
        self.commit(wait=True)
        if not self._closed:
            self._flushed()
            self._flush_scheduler.last = time.monotonic()
            self.dirty = False

    def flush_soon(self) -> None:
        """Start a flush: in the background where there is a flusher, else now."""
        flusher = self._background()
        if flusher is None:
            self.flush()
            return
        flusher.settle(False)
        self.commit()
        if not self._closed and not flusher.running and self.dirty:
            self._flush_scheduler.last = time.monotonic()
            flusher.start()

    def set_episode_metadata(self, data: Any) -> None:
        self.commit(wait=True)
        super().set_episode_metadata(data)

    def close(self) -> None:
        if not self._closed:
            try:
                self.commit(wait=True)
            finally:
                self._closed = True
                super().close()
                if self.journal is not None:  # the log holds every step now
                    self.journal.close()


class _Flusher:
    """One background flush at a time for a :class:`_Backend` (envlogger's flush holds the GIL:
    docs/performance.md, "Several sessions per worker").

    Only the flush runs in the thread; the worker's thread sees it done (:meth:`settle`)
    before it writes any later step and restarts the journal with the records of the steps
    that waited meanwhile first, so the journal always holds every step the flushed log
    lacks, and stays as short as the time between flushes.
    """

    def __init__(self, backend: _Backend) -> None:
        self.backend = backend
        self.running = False
        self.done = threading.Event()
        self.error: BaseException | None = None

    def start(self) -> None:
        self.running, self.error = True, None
        self.done.clear()
        flush_thread.submit(self)

    def run(self) -> None:
        """The flush itself, in the process's flush thread."""
        try:
            self.backend._data_writer.flush()
        except BaseException as exc:  # reported to the worker by settle()
            self.error = exc
        finally:
            self.done.set()

    def settle(self, wait: bool) -> bool:
        """True when no flush runs (any finished one is accounted for); waits if ``wait``."""
        if not self.running:
            return True
        if not self.done.wait(None if wait else 0):
            return False
        self.running = False
        if self.error is not None:
            raise RuntimeError(f"the episode log could not be flushed: {self.error}")
        backend = self.backend
        backend.dirty = bool(backend.pending)
        if backend.journal is not None:  # the steps that waited go first in the new lap
            backend.journal.restart(keep=[step[2] for step in backend.pending])
        return True


def open_reader(directory: Path | str) -> Any:
    """An ``envlogger.Reader`` over one episode's log (use as a context manager)."""
    return envlogger.Reader(data_directory=str(directory))


class EpisodeWriter:
    """Records one episode: wrap ``env`` (a dm_env) and step through :attr:`env`.

    A worker steps its environment itself and hands each timestep with its step metadata
    (keys :data:`format.STEP_METADATA_KEYS`: the frame it encoded, input, timing, info) to
    :meth:`record`. Or :meth:`reset` / :meth:`step` step the wrapped env and take the
    metadata from ``step_fn(timestep, action, env)``, called for every timestep, FIRST
    included (envlogger's own way; tests and benchmarks record so).
    With ``defer_records`` each step is encoded and written at the next :meth:`commit`
    (or flush / finalize) instead of inside :meth:`step`. With ``journal`` (the default)
    each step is in the step journal before :meth:`step` returns. With ``background_flush``
    the periodic flush (an ``fsync``) runs in a thread while stepping goes on; :meth:`flush`
    still returns only once everything recorded is durable.
    """

    def __init__(
        self,
        env: dm_env.Environment,
        directory: Path,
        metadata: dict[str, Any],
        step_fn: StepFn | None = None,
        *,
        flush_interval_s: float = FLUSH_INTERVAL_S,
        defer_records: bool = False,
        journal: bool = True,
        background_flush: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._scheduler = _TimedFlush(flush_interval_s)
        self._backend: _Backend | None = None
        self._finalized = False

        def make_backend(**kwargs: Any) -> _Backend:
            self._backend = _Backend(journal=journal, background=background_flush, **kwargs)
            return self._backend

        self.logger = environment_logger.EnvLogger(
            env,
            step_fn=step_fn,
            metadata=dict(metadata),
            backend=make_backend,
            data_directory=str(self.directory),
            max_episodes_per_file=1,
            writer_options=WRITER_OPTIONS,
            flush_scheduler=self._scheduler,
        )
        assert self._backend is not None
        self._backend.defer = defer_records
        self.steps: int = 0

    @property
    def finalized(self) -> bool:
        """True once :meth:`finalize` ran."""
        return self._finalized

    def reset(self) -> dm_env.TimeStep:
        """Start the episode (records FIRST)."""
        self._check_open()
        timestep = self.logger.reset()
        self.steps = 1
        return timestep

    def step(self, action: Any) -> dm_env.TimeStep:
        """Step the wrapped env and record the timestep."""
        self._check_open()
        timestep = self.logger.step(action)
        self.steps += 1
        return timestep

    def record(
        self, timestep: dm_env.TimeStep, action: Any, metadata: dict[str, Any], *, first: bool
    ) -> None:
        """Record a timestep the caller stepped (``first``: its reset, FIRST) with its step
        metadata: serialized and in the journal before this returns (as :meth:`step`)."""
        self._check_open()
        assert self._backend is not None
        data = step_data.StepData(timestep, action, metadata)
        self._backend.record_step(data, is_new_episode=first)
        self.steps = 1 if first else self.steps + 1

    def commit(self) -> None:
        """Write the steps held back by ``defer_records`` (no-op otherwise)."""
        if self._backend is not None and not self._finalized:
            self._backend.commit()

    @property
    def dirty(self) -> bool:
        """True when recorded steps are not flushed yet."""
        backend = self._backend
        return (
            backend is not None and not self._finalized and (backend.dirty or bool(backend.pending))
        )

    def flush(self) -> None:
        """Make everything recorded so far durable (readable after a crash)."""
        if self._backend is not None and not self._finalized:
            self._backend.flush()

    def flush_if_due(self) -> None:
        """Flush when the last flush is older than the flush interval (idle workers); in the
        background where the writer has ``background_flush``."""
        if self.dirty and time.monotonic() - self._scheduler.last >= self._scheduler.interval:
            assert self._backend is not None
            self._backend.flush_soon()

    def seconds_to_flush(self) -> float | None:
        """Seconds until unflushed steps are due a flush (None when nothing is pending)."""
        if not self.dirty:
            return None
        return max(0.0, self._scheduler.last + self._scheduler.interval - time.monotonic())

    def finalize(self, episode_end: dict[str, Any] | None = None) -> None:
        """Close the log (safe to call twice). ``episode_end`` becomes episode metadata."""
        if self._finalized:
            return
        self._finalized = True
        if self._backend is None:
            return
        try:
            if episode_end is not None and self.steps:
                self._backend.set_episode_metadata(episode_end)
        finally:
            self._backend.close()

    def _check_open(self) -> None:
        if self._finalized:
            raise RuntimeError("the episode log is already finalized")
