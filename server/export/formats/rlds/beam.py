"""The RLDS export as an Apache Beam pipeline: the single-process exporter's dataset, its
episodes encoded by many workers.

The pipeline::

    (index, episode) --Reshuffle--> encode: read the log, realign, serialize (the same
                                    encode_rlds as the single-process exporter); the record
                                    goes to the file records/<index>, its size on
        sizes of every record -> one shard plan (ShardPlanner over the sizes in selection
                                 order: the single-process writer's layout, shard for shard)
        sizes + plan -> (shard, index) --GroupByKey--> write each shard from the records'
                                                       files, in selection order

then, in this process, ``dataset_info.json`` and ``features.json`` from the shards' lengths
and sizes, the OXE statistics (episodes in selection order) and the card. Every file is the
one the single-process exporter writes, byte for byte.

Progress and cancel go through files in a work folder inside the export's partial folder,
which every worker must see (the DirectRunner's do; other runners need the data root on a
shared filesystem at the same path): each encoded episode leaves ``progress/<index>`` with its
step count, which a thread here counts; cancel leaves ``CANCEL``, which the workers check
before each episode (and a runner that can cancel a job, such as Flink or Dataflow, is asked
to). Encoding errors leave ``errors/<index>`` so the job reports the episode at fault.
"""

from __future__ import annotations

import os
import pickle
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions

from server.export.base import (
    CancelFn,
    EpisodeInput,
    ExportOptions,
    ExportResult,
    ProgressFn,
    Reference,
)
from server.export.card import ExportedEpisode
from server.export.episode import EnvSpecs
from server.export.errors import ExportCanceledError, ExportError
from server.export.formats.rlds import oxe
from server.export.formats.rlds.encoding import dataset_info_fields, encode_rlds, rlds_features
from server.export.formats.rlds.example import EpisodeSerializer
from server.export.formats.rlds.tfds_writer import (
    SPLIT,
    ShardPlanner,
    framed_size,
    shard_filename,
    write_dataset_info,
)
from server.export.formats.rlds.tfrecord import TFRecordWriter

WORK_DIR = ".beam"  # inside the export's partial folder; removed before it is renamed
POLL_S = 0.25
_NAMESPACE = "rlds_studio_export"


@dataclass(frozen=True)
class _Work:
    """The side channel between the workers and this process (paths as strings: pickled)."""

    root: str

    @property
    def cancel_marker(self) -> str:
        return os.path.join(self.root, "CANCEL")

    def path(self, kind: str, index: int) -> str:
        return os.path.join(self.root, kind, f"{index:09d}")

    def make(self) -> None:
        for kind in ("progress", "errors", "records", "shards"):
            os.makedirs(os.path.join(self.root, kind), exist_ok=True)

    def entries(self, kind: str) -> Iterator[os.DirEntry[str]]:
        with os.scandir(os.path.join(self.root, kind)) as it:
            yield from (e for e in it if not e.name.startswith("."))


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{uuid.uuid4().hex[:8]}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class _Encoded:
    """What flows through the pipeline for one encoded episode: not the record itself, which
    waits in ``records/<index>`` (the DirectRunner keeps collections in memory, so the records
    of a large export would not fit there)."""

    size: int  # the record's framed size
    summary: ExportedEpisode
    statistics: oxe.EpisodeRows | None


class EncodeEpisodes(beam.DoFn):
    """(index, episode) -> (index, _Encoded); leaves the record, a progress (or error) file."""

    def __init__(
        self, options: ExportOptions, reference: Reference, tag_names: Sequence[str], work: _Work
    ) -> None:
        self.options = options
        self.reference = reference  # each episode is checked against it
        self.tag_names = tuple(tag_names)
        self.work = work
        self.episodes = Metrics.counter(_NAMESPACE, "episodes")
        self.steps = Metrics.counter(_NAMESPACE, "steps")

    def setup(self) -> None:
        features = rlds_features(self.reference.specs, self.options, self.tag_names)
        self.serializer = EpisodeSerializer(features)

    def process(self, element: tuple[int, EpisodeInput]) -> Iterator[tuple[int, _Encoded]]:
        index, ep = element
        if os.path.exists(self.work.cancel_marker):
            raise ExportCanceledError("the export was canceled")
        try:
            encoded = encode_rlds(ep, self.options, self.tag_names, self.serializer, self.reference)
        except ExportError as exc:
            _write_atomic(self.work.path("errors", index), str(exc).encode())
            raise
        _write_atomic(self.work.path("records", index), encoded.record)
        steps = encoded.summary.num_steps
        _write_atomic(self.work.path("progress", index), str(steps).encode())
        self.episodes.inc()
        self.steps.inc(steps)
        yield index, _Encoded(framed_size(encoded.record), encoded.summary, encoded.statistics)


@dataclass(frozen=True)
class ShardPlan:
    """Which shard each episode's record goes to."""

    shard_of: dict[int, int]
    num_shards: int


def plan_shards(
    sizes: Iterable[tuple[int, int]], max_shard_bytes: int, max_episodes_per_shard: int | None
) -> ShardPlan:
    """The single-process writer's layout for records of these ``(index, framed size)``."""
    planner = ShardPlanner(max_shard_bytes, max_episodes_per_shard)
    shard_of = {index: planner.place(size) for index, size in sorted(sizes)}
    return ShardPlan(shard_of, len(planner.lengths))


@dataclass(frozen=True)
class _ShardMeta:
    """What a shard's writer tells this process: its size and its episodes' summaries."""

    shard: int
    num_records: int
    num_bytes: int
    episodes: list[tuple[int, ExportedEpisode, oxe.EpisodeRows | None]]


def write_shard(
    item: tuple[int, Iterable[tuple[int, _Encoded]]],
    plan: ShardPlan,
    data_dir: str,
    name: str,
    work: _Work,
) -> int:
    """Write one shard's records in selection order under its final name (idempotent: a
    retried bundle rewrites the same file; the records' files are removed only when the job
    ends); returns the records written."""
    shard, entries = item
    if os.path.exists(work.cancel_marker):
        raise ExportCanceledError("the export was canceled")
    ordered = sorted(entries, key=lambda e: e[0])
    final = os.path.join(data_dir, shard_filename(name, shard, plan.num_shards))
    partial = os.path.join(data_dir, f".shard-{shard:05d}.{uuid.uuid4().hex[:8]}.partial")
    with TFRecordWriter(Path(partial)) as writer:
        for index, _ in ordered:
            with open(work.path("records", index), "rb") as f:
                writer.write(f.read())
    os.replace(partial, final)
    meta = _ShardMeta(
        shard,
        writer.num_records,
        writer.num_bytes,
        [(index, e.summary, e.statistics) for index, e in ordered],
    )
    _write_atomic(work.path("shards", shard), pickle.dumps(meta))
    return writer.num_records


def build_pipeline(
    pipeline: beam.Pipeline,
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    reference: Reference,
    tag_names: Sequence[str],
    data_dir: Path,
    work: _Work,
) -> None:
    """Add the export's transforms to ``pipeline``."""
    encoded = (
        pipeline
        | "Episodes" >> beam.Create(list(enumerate(episodes)), reshuffle=False)
        | "Spread" >> beam.Reshuffle()
        | "Encode" >> beam.ParDo(EncodeEpisodes(options, reference, tag_names, work))
    )
    plan = (
        encoded
        | "Sizes" >> beam.MapTuple(lambda index, e: (index, e.size))
        | "AllSizes" >> beam.combiners.ToList()
        | "Plan" >> beam.Map(plan_shards, options.max_shard_bytes, options.max_episodes_per_shard)
    )
    _ = (
        encoded
        | "ToShard"
        >> beam.Map(lambda kv, p: (p.shard_of[kv[0]], kv), p=beam.pvalue.AsSingleton(plan))
        | "ByShard" >> beam.GroupByKey()
        | "Write"
        >> beam.Map(
            write_shard,
            plan=beam.pvalue.AsSingleton(plan),
            data_dir=str(data_dir),
            name=options.name,
            work=work,
        )
    )


class _Monitor(threading.Thread):
    """Counts the workers' progress files and relays cancel requests to them."""

    def __init__(
        self, work: _Work, total: int, progress: ProgressFn | None, cancel: CancelFn | None
    ) -> None:
        super().__init__(name="beam-export-monitor", daemon=True)
        self.work = work
        self.total = total
        self.progress = progress
        self.cancel = cancel
        self.canceled = False
        self.failure: Exception | None = None  # raised by the progress callback
        self.result: Any = None  # the PipelineResult, once run() returns (non-blocking runners)
        self._steps: dict[str, int] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(POLL_S):
            self.poll()

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join()

    def poll(self) -> None:
        if not self.canceled and self.cancel is not None and self.cancel():
            self.canceled = True
            self._stop_workers()
        new = False
        for entry in self.work.entries("progress"):
            if entry.name not in self._steps:
                with open(entry.path) as f:
                    self._steps[entry.name] = int(f.read())
                new = True
        if new and self.progress is not None and self.failure is None:
            try:
                self.progress(len(self._steps), self.total, sum(self._steps.values()))
            except Exception as exc:  # e.g. the app that follows the job is gone (broken pipe)
                self.failure = exc
                self._stop_workers()

    def _stop_workers(self) -> None:
        _write_atomic(self.work.cancel_marker, b"")
        if self.result is not None:
            try:
                self.result.cancel()
            except Exception:  # noqa: BLE001 - runners without cancel: workers stop by file
                pass


def _first_error(work: _Work) -> str | None:
    errors = sorted(work.entries("errors"), key=lambda e: e.name)
    if not errors:
        return None
    with open(errors[0].path) as f:
        return f.read()


def _run(pipeline: beam.Pipeline, monitor: _Monitor) -> None:
    result = pipeline.run()  # the DirectRunner returns when done; others once submitted
    monitor.result = result
    state = result.wait_until_finish()
    if str(state).upper().endswith("CANCELLED"):
        raise ExportCanceledError("the export was canceled")


def write_rlds_beam(
    episodes: Sequence[EpisodeInput],
    options: ExportOptions,
    reference: Reference,
    tag_names: Sequence[str],
    tmp: Path,
    progress: ProgressFn | None,
    cancel: CancelFn | None,
) -> ExportResult:
    """Write the RLDS dataset into ``tmp`` with a Beam pipeline (see the module doc)."""
    assert options.beam is not None
    ShardPlanner(options.max_shard_bytes, options.max_episodes_per_shard)  # checks the limits
    data_dir = tmp / options.name / options.version
    data_dir.mkdir(parents=True)
    work = _Work(str(tmp / WORK_DIR))
    work.make()
    pipeline = beam.Pipeline(options=PipelineOptions(options.beam.flags()))
    build_pipeline(pipeline, episodes, options, reference, tag_names, data_dir, work)
    monitor = _Monitor(work, len(episodes), progress, cancel)
    monitor.start()
    try:
        _run(pipeline, monitor)
    except Exception as exc:
        monitor.stop()
        if monitor.failure is not None:
            raise monitor.failure from exc
        if monitor.canceled or isinstance(exc, ExportCanceledError):
            raise ExportCanceledError("the export was canceled") from exc
        message = _first_error(work)
        if message is not None:
            raise ExportError(message) from exc
        raise ExportError(f"the Beam pipeline failed: {type(exc).__name__}: {exc}") from exc
    finally:
        monitor.stop()
    monitor.poll()  # the last progress files
    if monitor.failure is not None:
        raise monitor.failure
    if monitor.canceled:
        raise ExportCanceledError("the export was canceled")
    result = _finish(len(episodes), options, reference.specs, tag_names, data_dir, work)
    shutil.rmtree(work.root)
    return result


def _finish(
    num_episodes: int,
    options: ExportOptions,
    specs: EnvSpecs,
    tag_names: Sequence[str],
    data_dir: Path,
    work: _Work,
) -> ExportResult:
    metas: list[_ShardMeta] = []
    for entry in sorted(work.entries("shards"), key=lambda e: e.name):
        with open(entry.path, "rb") as f:
            metas.append(pickle.load(f))  # noqa: S301 - written by this export's workers
    entries = sorted(e for m in metas for e in m.episodes)
    if [m.shard for m in metas] != list(range(len(metas))) or [e[0] for e in entries] != list(
        range(num_episodes)
    ):
        raise ExportError("the Beam pipeline did not write every episode")
    features = rlds_features(specs, options, tag_names)
    write_dataset_info(
        data_dir,
        features=features,
        **dataset_info_fields(options),
        splits={SPLIT: ([m.num_records for m in metas], sum(m.num_bytes for m in metas))},
    )
    if options.profile == "oxe":
        stats = oxe.Statistics()
        for _, _, rows in entries:
            assert rows is not None
            stats.add(rows)
        stats.write(data_dir)
    return ExportResult(
        path=data_dir.parent.parent,
        format=options.format,
        episodes=tuple(summary for _, summary, _ in entries),
        data_dir=data_dir,
        shard_paths=tuple(
            data_dir / shard_filename(options.name, m.shard, len(metas)) for m in metas
        ),
    )
