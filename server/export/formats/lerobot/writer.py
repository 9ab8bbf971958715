"""The LeRobot format's writer (the on-disk format is in
:mod:`server.export.formats.lerobot.dataset`).

Episodes go in order into data file 0, 1, ... (``data/chunk-000/file-000.parquet`` ...) and
the matching video files; a file is closed when it holds ``max_shard_bytes`` of rows or
``max_episodes_per_shard`` episodes. Each step's ``timestamp`` is its recorded time (when the
worker produced the observation) relative to the episode's first step, in whole ms; a video
file holds its episodes one after another, from each episode's ``from_timestamp``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from server.export import video
from server.export.base import EpisodeInput, ExportOptions, ExportResult
from server.export.columns import check_range, control_values, timing_column
from server.export.episode import RldsEpisode
from server.export.errors import ExportError
from server.export.formats.lerobot import dataset as fmt
from server.export.formats.lerobot.stats import Stats
from server.export.formats.lerobot.video_slots import SLOTS, EpisodeVideo, VideoSlots, leaf
from server.export.loop import WriteJob, export_threads
from server.export.tags import tag_columns


@dataclass
class _File:
    """The data file (and its video files) episodes are being written to."""

    index: int
    batches: list[pa.RecordBatch] = field(default_factory=list)
    nbytes: int = 0
    episodes: int = 0
    videos: dict[str, video.VideoWriter] = field(default_factory=dict)
    video_end_ms: dict[str, int] = field(default_factory=dict)

    @property
    def chunk_file(self) -> dict[str, int]:
        return {
            "chunk_index": self.index // fmt.CHUNKS_SIZE,
            "file_index": self.index % fmt.CHUNKS_SIZE,
        }


@dataclass(frozen=True)
class _Encoded:
    """One episode's columns and videos, made before its turn to be written."""

    columns: dict[str, pa.Array]
    stat_values: list[tuple[str, np.ndarray]]  # (feature, values) for the statistics
    videos: dict[str, EpisodeVideo]  # per video feature


class LeRobotWriter:
    """Writes one LeRobot dataset under ``root``; ``add`` episodes, then ``finish``."""

    def __init__(self, root: Path, cols: list[fmt.Column], options: ExportOptions) -> None:
        self.root = root
        self.cols = cols
        self.options = options
        self.video_cols = [c for c in cols if c.is_video]
        self.data_cols = [c for c in cols if not c.is_video]
        self.tasks: dict[str, int] = {}
        self.subtasks: dict[str, int] = {}  # narration text -> subtask_index, as first met
        self.rows: list[dict[str, Any]] = []
        self.stats = Stats()
        self.video_shapes: dict[str, tuple[int, int, int]] = {}
        self.intervals: list[int] = []
        self.total = 0
        self.file = _File(0)
        self.env_id = ""
        self.splits: list[str] = []  # each episode's split, by episode index
        self.slots = VideoSlots()  # the videos' encoders

    # --- one episode ----------------------------------------------------------------------
    def encode(
        self,
        i: int,
        episode: RldsEpisode,
        tag_cols: dict[str, np.ndarray],
        narrations: list[str] | None = None,
    ) -> _Encoded:
        """What does not depend on the episodes before: columns, and each video's frames
        decoded, counted and encoded (from a keyframe) on episode ``i``'s encoder slot (runs
        in a worker thread, see ``WriteJob.each_encoded``; the codecs release the GIL, so
        episodes are encoded on several cores at once). ``narrations``: each frame's (None:
        "")."""
        texts = [""] * len(episode) if narrations is None else narrations
        if len(texts) != len(episode):
            raise ExportError(f"narration: {len(texts)} values for {len(episode)} steps")
        columns, stat_values = self._data_columns(episode, tag_cols, texts)
        videos = {col.name: self.slots.encode(i, col, episode) for col in self.video_cols}
        return _Encoded(columns, stat_values, videos)

    def add(self, ep: EpisodeInput, episode: RldsEpisode, encoded: _Encoded) -> None:
        """Append one encoded episode (in the episodes' order)."""
        n = len(episode)
        times = video.step_times_ms(episode.observed_ms)
        interval = video.interval_ms(episode.observed_ms)
        self.intervals.append(interval)
        env_id = str(episode.log_metadata.get("env_id", ""))
        self.env_id = self.env_id or env_id
        task = ep.instruction.strip() or env_id or "play"
        task_index = self.tasks.setdefault(task, len(self.tasks))
        index = len(self.rows)
        for name, arr in encoded.stat_values:
            self.stats.add(name, arr)
        columns = dict(encoded.columns)
        columns["timestamp"] = pa.array(np.asarray(times, dtype=np.float64) / 1000.0, pa.float32())
        columns["frame_index"] = pa.array(np.arange(n, dtype=np.int64))
        columns["episode_index"] = pa.array(np.full(n, index, dtype=np.int64))
        columns["index"] = pa.array(np.arange(self.total, self.total + n, dtype=np.int64))
        columns["task_index"] = pa.array(np.full(n, task_index, dtype=np.int64))
        narrations = columns[fmt.NARRATION_KEY].to_pylist()
        subtask_indices = [self.subtasks.setdefault(t, len(self.subtasks)) for t in narrations]
        columns[fmt.SUBTASK_INDEX] = pa.array(subtask_indices, type=pa.int64())
        batch = pa.RecordBatch.from_pydict(columns)
        self._roll_if_full(batch.nbytes)
        f = self.file
        f.batches.append(batch)
        f.nbytes += batch.nbytes
        f.episodes += 1
        row: dict[str, Any] = {
            "episode_index": index,
            "tasks": [task],
            "length": n,
            "data/chunk_index": f.chunk_file["chunk_index"],
            "data/file_index": f.chunk_file["file_index"],
            "dataset_from_index": self.total,
            "dataset_to_index": self.total + n,
        }
        for col in self.video_cols:
            start = f.video_end_ms.get(col.name, 0)
            self._write_video(col, encoded.videos[col.name], start)
            self.stats.add_counts(col.name, encoded.videos[col.name].counts, n)
            end = start + times[-1] + interval
            f.video_end_ms[col.name] = end
            row[f"videos/{col.name}/chunk_index"] = f.chunk_file["chunk_index"]
            row[f"videos/{col.name}/file_index"] = f.chunk_file["file_index"]
            row[f"videos/{col.name}/from_timestamp"] = start / 1000.0
            row[f"videos/{col.name}/to_timestamp"] = end / 1000.0
        row.update(
            {
                "meta/episodes/chunk_index": 0,
                "meta/episodes/file_index": 0,
                "episode_id": ep.episode_id,
                "agent_id": ep.agent_id,
                "status": ep.status,
                "outcome": "terminated" if episode.terminated else "truncated",
                # the success/failure labels (outcome is taken: how the episode ended)
                "success_outcome": ep.outcome,
                "player_outcome": ep.player_outcome,
                "reviewer_outcome": ep.reviewer_outcome,
                **ep.replay_fields(),
                "episode_tags": list(ep.tags),
                # the task drawn ("" none) and the instruction (the task's, else the
                # environment's; "" none: ``tasks`` then names the environment)
                **ep.task_fields(),
                # who ended it and what the environment reported (fields.ENDING_FIELDS)
                **ep.ending_fields(episode),
                # feedback studies' judgements (server/export/judgements.py; zeros: none)
                **ep.judgement_fields(),
                "notes": ep.notes,
                "total_reward": episode.total_reward,
                **_log_fields(episode.log_metadata),
            }
        )
        self.rows.append(row)
        self.splits.append(ep.split_name)
        self.total += n

    def _data_columns(
        self, episode: RldsEpisode, tag_cols: dict[str, np.ndarray], narrations: list[str]
    ) -> tuple[dict[str, pa.Array], list[tuple[str, np.ndarray]]]:
        out: dict[str, pa.Array] = {}
        stat_values: list[tuple[str, np.ndarray]] = []
        for col in self.data_cols:
            where = "/".join((col.source, *col.path)) if col.path else col.source
            values = self._values(col, episode, tag_cols, where, narrations)
            if col.dtype != "string":
                arr = np.asarray(values)
                if col.dtype != "bool":
                    check_range(arr, col.dtype, where)
                    arr = arr.astype(col.dtype, copy=False)
                expected = (len(episode), *(col.spec_shape or ()))
                if arr.shape != expected:
                    raise ExportError(
                        f"{where}: recorded shape {arr.shape[1:]} != {col.spec_shape}"
                    )
                stat_values.append((col.name, arr))
                values = arr
            out[col.name] = fmt.arrow_column(col, values)
        return out, stat_values

    @staticmethod
    def _values(
        col: fmt.Column,
        episode: RldsEpisode,
        tag_cols: dict[str, np.ndarray],
        where: str,
        narrations: list[str],
    ) -> Any:
        src = col.source
        sequences = {
            "observation": episode.observations, "action": episode.actions,
            "human_action": episode.human_actions, "policy_action": episode.policy_actions,
        }  # fmt: skip
        if src in sequences:
            seq = sequences[src]
            if col.dtype == "string":
                return [leaf(v, col.path) for v in seq]
            return np.stack([np.asarray(leaf(v, col.path)) for v in seq])
        if src == "reward":
            return np.stack([np.asarray(r) for r in episode.rewards])
        if src == "discount":
            return np.stack([np.asarray(d) for d in episode.discounts])
        if src in ("is_first", "is_last", "is_terminal"):
            return np.asarray(getattr(episode, src), dtype=bool)
        if src == "info":
            return episode.infos
        if src == "input":
            return episode.inputs
        if src == "camera":
            return episode.cameras
        if src == "timing":
            return timing_column(episode.timings, col.path[0])
        if src == "tag":
            return tag_cols[col.path[0]]
        if src == "narration":
            return narrations
        if src == "control":
            return control_values(episode, col.path[0])
        raise ExportError(f"no values for {where}")

    def _write_video(self, col: fmt.Column, episode_video: EpisodeVideo, start: int) -> None:
        shape = episode_video.shape
        known = self.video_shapes.setdefault(col.name, (shape[0], shape[1], 3))
        f = self.file
        writer = f.videos.get(col.name)
        if writer is None:
            path = self.root / fmt.VIDEO_PATH.format(video_key=col.name, **f.chunk_file)
            # its encoder only gives the file its headers (the episodes' come from the slots)
            writer = video.VideoWriter(path, known[1], known[0], video.LOSSLESS, threads=1)
            f.videos[col.name] = writer
        t, other = (0, shape) if shape != known else (episode_video.other or (0, shape))
        if other != known or episode_video.encoded is None:
            raise ExportError(f"step {t}, field {col.name}: a {other} frame in a video of {known}")
        writer.mux(episode_video.encoded, start)

    # --- files ----------------------------------------------------------------------------
    def _roll_if_full(self, nbytes: int) -> None:
        f = self.file
        if not f.episodes:
            return
        full_bytes = f.nbytes + nbytes > self.options.max_shard_bytes
        per_file = self.options.max_episodes_per_shard
        if full_bytes or (per_file is not None and f.episodes >= per_file):
            self._close_file()
            self.file = _File(f.index + 1)

    def _close_file(self) -> None:
        f = self.file
        if f.batches:
            table = pa.Table.from_batches(f.batches)
            fmt.write_table(self.root / fmt.DATA_PATH.format(**f.chunk_file), table)
        for writer in f.videos.values():
            writer.close()
        f.videos.clear()

    def abort(self) -> None:
        for writer in self.file.videos.values():
            writer.abort()

    def finish(self) -> None:
        """Close the last files; write meta/."""
        self._close_file()
        fps = max(1, round(1000 / statistics.median(self.intervals))) if self.intervals else 30
        features: dict[str, Any] = {}
        shapes: dict[str, tuple[int, ...]] = {}
        for col in self.cols:
            if col.is_video:
                features[col.name] = fmt.video_feature_doc(col, self.video_shapes[col.name], fps)
            else:
                features[col.name] = fmt.feature_doc(col)
                shapes[col.name] = col.shape
        features.update(fmt.DEFAULT_FEATURE_DOCS)
        mb = max(1, round(self.options.max_shard_bytes / (1024 * 1024)))
        info_doc = {
            "codebase_version": fmt.CODEBASE_VERSION,
            "robot_type": self.env_id or None,
            "total_episodes": len(self.rows),
            "total_frames": self.total,
            "total_tasks": len(self.tasks),
            "chunks_size": fmt.CHUNKS_SIZE,
            "data_files_size_in_mb": mb,
            "video_files_size_in_mb": mb,
            "fps": fps,
            "splits": split_ranges(self.splits),
            "data_path": fmt.DATA_PATH,
            "video_path": fmt.VIDEO_PATH if self.video_cols else None,
            "features": features,
        }
        fmt.write_json(self.root / "meta" / "info.json", info_doc)
        stats = self.stats.to_json(shapes)
        fmt.write_json(self.root / "meta" / "stats.json", stats)
        fmt.write_tasks(self.root, sorted(self.tasks, key=self.tasks.__getitem__))
        fmt.write_subtasks(self.root, sorted(self.subtasks, key=self.subtasks.__getitem__))
        table = pa.Table.from_pylist(self.rows)
        fmt.write_table(self.root / fmt.EPISODES_PATH.format(chunk_index=0, file_index=0), table)


def split_ranges(splits: list[str]) -> dict[str, str]:
    """info.json's ``splits``: each split's episode index range ``"from:to"`` (LeRobot's
    convention), the splits in the order they were written (train, validation, test)."""
    ranges: dict[str, str] = {}
    start = 0
    for i in range(1, len(splits) + 1):
        if i == len(splits) or splits[i] != splits[start]:
            if splits[start] in ranges:
                raise ExportError(f"the {splits[start]} split's episodes are not together")
            ranges[splits[start]] = f"{start}:{i}"
            start = i
    return ranges or {"train": "0:0"}


def _log_fields(meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: str(meta.get(k, "")) for k in ("study_id", "env_id", "env_config")}
    seed = meta.get("seed")
    out["seed"] = seed if isinstance(seed, int) and not isinstance(seed, bool) else -1
    return out


def write_lerobot(job: WriteJob) -> ExportResult:
    """Write the episodes as a LeRobot v3.0 dataset into ``job.out/<name>`` (see
    dataset.py)."""
    options, tag_names = job.options, job.tag_names
    cols = fmt.features_of(
        job.specs, keep_step_metadata=options.keep_step_metadata, tag_names=tag_names
    )
    root = job.out / options.name
    writer = LeRobotWriter(root, cols, options)
    index = {ep.episode_id: i for i, ep in enumerate(job.episodes)}

    def encode(ep: EpisodeInput, episode: RldsEpisode) -> _Encoded:
        tag_cols = tag_columns(ep.step_tags, tag_names, len(episode))
        narrations = ep.narration_column(len(episode))
        return writer.encode(index[ep.episode_id], episode, tag_cols, narrations)

    def write(_i: int, ep: EpisodeInput, episode: RldsEpisode, encoded: _Encoded) -> None:
        writer.add(ep, episode, encoded)

    try:
        threads = min(export_threads(), SLOTS)  # a slot's episodes one after another
        summaries = job.each_encoded(encode, write, threads=threads)
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    return ExportResult(
        path=job.out, format=options.format, episodes=tuple(summaries), data_dir=root
    )
