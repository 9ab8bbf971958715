"""The step journal: a step's record reaches the operating system before its frame is sent.

envlogger buffers records inside the worker process and its only flush is an ``fsync``
(~10 ms), so the worker flushes every :data:`writer.FLUSH_INTERVAL_S`; a step recorded since
the last flush lives only in the worker's memory. When every process of a replica dies at
once (a container's death) those steps would be lost although their frames were shown.

So each recorded step is first written here, in the episode's folder, with one
``pwritev`` (no fsync: the kernel keeps the page when the process dies). After each log
flush the journal starts again at its beginning, overwriting in place: it holds only the
steps since the last flush, its pages stay allocated (an overwrite costs a memory copy), and
it rarely reaches the disk. The worker holds an exclusive ``flock`` on it for the episode's
life; :mod:`server.recording.recovery` takes that lock before it reads the journal, so it
never touches a log a live worker writes.

A file is the log metadata record, then step records. A step record is ``HEAD`` (magic
``RSJ2``, index, body length, is-new-episode flag), the step's envlogger ``Data`` message
serialized (the message the log's writer gets, encoded once for both), and ``FOOT`` (index,
magic). The metadata record (magic ``RSJ1``; steps too in journals written before
2026-11-25) is a protocol-5 pickle whose arrays travel as raw buffers after it: ``HEAD``
(magic, index -1, pickle length, buffer count), the buffers' lengths, the pickle, the
buffers, ``FOOT``. Records after a restart overwrite older ones; reading stops at the first
record that is not the next index, so a torn write or an older lap is never read as a step.
Only our own types are unpickled (:class:`_Unpickler`).
"""

from __future__ import annotations

import fcntl
import io
import os
import pickle
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dm_env

from server.recording import codec
from server.recording.envlogger_log import codec as envlogger_codec
from server.recording.envlogger_log import step_data, storage_pb2

JOURNAL_NAME = "steps.journal"
MAGIC = b"RSJ1"  # a pickled record
STEP_MAGIC = b"RSJ2"  # a step's serialized Data message
HEAD = struct.Struct("<4sqII")  # magic, index (-1: the log metadata), body bytes, buffers|flag
LENGTH = struct.Struct("<Q")
FOOT = struct.Struct("<q4s")
META = -1


class JournalError(RuntimeError):
    """The journal could not be written (the step is not accepted)."""


def journal_path(directory: Path | str) -> Path:
    return Path(directory) / JOURNAL_NAME


def _record(index: int, value: Any) -> list[Any]:
    buffers: list[pickle.PickleBuffer] = []
    body = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    head = HEAD.pack(MAGIC, index, len(body), len(raws))
    lengths = b"".join(LENGTH.pack(raw.nbytes) for raw in raws)
    return [head + lengths, body, *raws, FOOT.pack(index, MAGIC)]


def _step_record(index: int, encoded: Any, is_new_episode: bool) -> tuple[bytes, bytes, bytes]:
    body = encoded.SerializeToString()
    head = HEAD.pack(STEP_MAGIC, index, len(body), int(is_new_episode))
    return head, body, FOOT.pack(index, STEP_MAGIC)


class Journal:
    """The journal of one episode, written by its worker (see the module doc)."""

    def __init__(self, directory: Path | str, metadata: Any) -> None:
        self.path = journal_path(directory)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o640)
        fcntl.flock(self.fd, fcntl.LOCK_EX)  # held until close (or the process's death)
        self.start = self._write(_record(META, metadata), 0)
        self.offset = self.start
        self.index = 0  # of the next step

    def _write(self, parts: Sequence[Any], offset: int) -> int:
        size = sum(memoryview(part).nbytes for part in parts)
        done = os.pwritev(self.fd, parts, offset)
        if done != size:  # a short write (signal, huge record): the rest, in one piece
            rest = b"".join(bytes(part) for part in parts)[done:]
            while rest:
                n = os.pwrite(self.fd, rest, offset + done)
                if n <= 0:
                    raise JournalError("the step journal could not be written")
                done, rest = done + n, rest[n:]
        return offset + size

    def append(self, encoded: Any, is_new_episode: bool) -> tuple[bytes, ...]:
        """Write step ``self.index`` (its envlogger ``Data`` message) before it is sent
        anywhere; its record's parts, for :meth:`restart`."""
        parts = _step_record(self.index, encoded, is_new_episode)
        try:
            self.offset = self._write(parts, self.offset)
        except OSError as exc:
            raise JournalError(f"the step journal could not be written: {exc}") from exc
        self.index += 1
        return parts

    def restart(self, keep: Sequence[Sequence[bytes]] = ()) -> None:
        """Every step journaled so far but the last ``len(keep)`` is flushed in the log:
        overwrite from the start, with those steps' records (as :meth:`append` returned
        them) first."""
        self.offset = self.start
        try:
            for record in keep:
                self.offset = self._write(record, self.offset)
        except OSError as exc:
            raise JournalError(f"the step journal could not be written: {exc}") from exc

    def close(self) -> None:
        """The log is closed (it holds every step): the journal goes, then its lock."""
        if self.fd < 0:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = -1


# -- reading (recovery) ---------------------------------------------------------------------
_ALLOWED = {
    ("envlogger.step_data", "StepData"),
    ("dm_env._environment", "TimeStep"),
    ("dm_env._environment", "StepType"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("collections", "OrderedDict"),
}


class _Unpickler(pickle.Unpickler):
    """Unpickles steps and nothing else: only the classes a step is made of."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"not a step type: {module}.{name}")
        return super().find_class(module, name)


def _load(body: memoryview, buffers: list[memoryview]) -> Any:
    return _Unpickler(io.BytesIO(body), buffers=buffers).load()


def _read_record(data: memoryview, offset: int) -> tuple[int, Any, int] | None:
    """(index, value, next offset) of the record at ``offset``; None where none is whole."""
    if offset + HEAD.size > len(data):
        return None
    magic, index, body_size, count = HEAD.unpack_from(data, offset)
    cursor = offset + HEAD.size
    if magic == STEP_MAGIC:
        end = cursor + body_size
        if end + FOOT.size > len(data) or FOOT.unpack_from(data, end) != (index, STEP_MAGIC):
            return None
        try:
            step = storage_pb2.Data.FromString(bytes(data[cursor:end]))
        except Exception:  # a torn record whose frame could not have been sent
            return None
        return index, (step, bool(count)), end + FOOT.size
    if magic != MAGIC or count > 1_000_000 or cursor + count * LENGTH.size > len(data):
        return None
    sizes = [LENGTH.unpack_from(data, cursor + i * LENGTH.size)[0] for i in range(count)]
    cursor += count * LENGTH.size
    end = cursor + body_size + sum(sizes)
    if end + FOOT.size > len(data) or FOOT.unpack_from(data, end) != (index, MAGIC):
        return None
    body, cursor = data[cursor : cursor + body_size], cursor + body_size
    buffers = []
    for size in sizes:
        buffers.append(data[cursor : cursor + size])
        cursor += size
    try:
        value = _load(body, buffers)
    except Exception:  # a torn record whose frame could not have been sent
        return None
    return index, value, end + FOOT.size


def read(data: bytes) -> tuple[Any, list[tuple[int, Any, bool]]]:
    """(log metadata, [(index, step, is_new_episode), ...]) of a journal's bytes; a step is
    its envlogger ``Data`` message (:func:`decode` makes it a ``StepData``).

    Steps are consecutive indexes from the first one after the metadata record: the records
    of the current lap. Raises ValueError when there is no metadata record.
    """
    view = memoryview(data)
    first = _read_record(view, 0)
    if first is None or first[0] != META:
        raise ValueError("not a step journal")
    metadata, offset = first[1], first[2]
    steps: list[tuple[int, Any, bool]] = []
    while (record := _read_record(view, offset)) is not None:
        index, (step, is_new), offset = record
        if steps and index != steps[-1][0] + 1:
            break  # an older lap's record after the current one
        if not isinstance(step, storage_pb2.Data):  # pickled by an earlier version
            step = codec.encode(step)
        steps.append((index, step, bool(is_new)))
    return metadata, steps


def decode(encoded: Any) -> Any:
    """A journaled step's ``Data`` message as the ``StepData`` a log reader returns."""
    value = envlogger_codec.decode(encoded)
    timestep = dm_env.TimeStep(dm_env.StepType(value[0][0]), *value[0][1:4])
    return step_data.StepData(timestep, value[1], value[2])
