"""A TensorFlow-free writer of a TFDS dataset directory that ``builder_from_directory`` loads.

Layout: ``<root>/<name>/<version>/`` with ``dataset_info.json``, ``features.json`` and the
TFRecord shards ``<name>-<split>.tfrecord-<i>-of-<n>`` (one serialized episode per record;
``train`` only, unless a dataset's export gives episodes their validation or test split: each
split its own shards, counted from 0, and its entry in ``dataset_info.json``).
The number of shards is known only at the end, so shards are written under provisional names
and renamed by :meth:`DatasetWriter.finish`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tensorflow_datasets as tfds

from server.export.base import DEFAULT_MAX_SHARD_BYTES, SPLITS
from server.export.errors import ExportError
from server.export.formats.rlds.tfrecord import TFRecordWriter
from server.export.request import check_dataset_name

SPLIT = "train"
FILE_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"


def shard_filename(name: str, index: int, num_shards: int, split: str = SPLIT) -> str:
    """The file name TFDS expects for shard ``index`` of ``num_shards`` of ``split``."""
    return f"{name}-{split}.tfrecord-{index:05d}-of-{num_shards:05d}"


@dataclass(frozen=True)
class WrittenSplit:
    """What :meth:`DatasetWriter.finish` wrote (every split's shards, in split order)."""

    data_dir: Path
    shard_paths: list[Path]
    shard_lengths: list[int]
    num_bytes: int


class ShardPlanner:
    """Which shard each record goes to, records placed in order: a new shard starts when the
    current one would pass ``max_shard_bytes`` or holds ``max_episodes_per_shard`` records.

    The single-process writer and the Beam pipeline (which plans from every record's size
    once all are encoded) share this rule, so both write the same shard layout.
    """

    def __init__(self, max_shard_bytes: int, max_episodes_per_shard: int | None) -> None:
        if max_shard_bytes <= 0 or (
            max_episodes_per_shard is not None and max_episodes_per_shard <= 0
        ):
            raise ExportError("shard limits must be positive")
        self.max_shard_bytes = max_shard_bytes
        self.max_episodes_per_shard = max_episodes_per_shard
        self.lengths: list[int] = []  # records per shard
        self.sizes: list[int] = []  # framed bytes per shard

    def place(self, framed_size: int) -> int:
        """The shard of the next record, ``framed_size`` bytes long once framed."""
        if self.lengths:
            full_bytes = self.sizes[-1] + framed_size > self.max_shard_bytes
            full_count = (
                self.max_episodes_per_shard is not None
                and self.lengths[-1] >= self.max_episodes_per_shard
            )
            if full_bytes or full_count:
                self.lengths.append(0)
                self.sizes.append(0)
        else:
            self.lengths.append(0)
            self.sizes.append(0)
        self.lengths[-1] += 1
        self.sizes[-1] += framed_size
        return len(self.lengths) - 1


def framed_size(serialized_episode: bytes) -> int:
    """A record's size in a TFRecord file: the data, its length and two checksums."""
    return len(serialized_episode) + 16


class DatasetWriter:
    """Writes serialized episodes into size- or count-limited shards, then the metadata."""

    def __init__(
        self,
        root: Path,
        name: str,
        version: str,
        features: Any,
        *,
        description: str = "",
        metadata: dict[str, Any] | None = None,
        max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
        max_episodes_per_shard: int | None = None,
    ) -> None:
        check_dataset_name(name, version)
        self._limits = (max_shard_bytes, max_episodes_per_shard)
        ShardPlanner(*self._limits)  # the limits checked before any writing
        self.name = name
        self.version = version
        self.features = features
        self.description = description
        self.metadata = metadata or {}
        self.data_dir = Path(root) / name / version
        self.data_dir.mkdir(parents=True, exist_ok=False)
        # per split: its planner and shards (numbered across splits while provisional)
        self._planners: dict[str, ShardPlanner] = {}
        self._shards: dict[str, list[TFRecordWriter]] = {}
        self._opened = 0

    def add(self, serialized_episode: bytes, split: str = SPLIT) -> None:
        """Append one serialized episode (a ``tf.train.Example``) to ``split``'s shards."""
        planner = self._planners.setdefault(split, ShardPlanner(*self._limits))
        shards = self._shards.setdefault(split, [])
        index = planner.place(framed_size(serialized_episode))
        if index == len(shards):
            if shards:
                shards[-1].close()
            shards.append(TFRecordWriter(self.data_dir / f".shard-{self._opened:05d}.partial"))
            self._opened += 1
        shards[index].write(serialized_episode)

    def close(self) -> None:
        """Close open shard files (after a failure; :meth:`finish` closes them too)."""
        for shards in self._shards.values():
            for shard in shards:
                shard.close()

    def finish(self) -> WrittenSplit:
        """Give shards their final names and write ``dataset_info.json`` and ``features.json``
        (the splits in train, validation, test order)."""
        self.close()
        if not self._shards:
            raise ExportError("no episode to write")
        paths: list[Path] = []
        splits: dict[str, tuple[list[int], int]] = {}
        for split in sorted(self._shards, key=_split_order):
            shards = self._shards[split]
            for i, shard in enumerate(shards):
                final = self.data_dir / shard_filename(self.name, i, len(shards), split)
                shard.path.rename(final)
                paths.append(final)
            splits[split] = ([s.num_records for s in shards], sum(s.num_bytes for s in shards))
        write_dataset_info(
            self.data_dir,
            self.name,
            self.version,
            self.features,
            description=self.description,
            metadata=self.metadata,
            splits=splits,
        )
        lengths = [n for split_lengths, _ in splits.values() for n in split_lengths]
        return WrittenSplit(self.data_dir, paths, lengths, sum(b for _, b in splits.values()))


def _split_order(split: str) -> tuple[int, str]:
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), split)


def write_dataset_info(
    data_dir: Path,
    name: str,
    version: str,
    features: Any,
    *,
    description: str,
    metadata: dict[str, Any],
    splits: Mapping[str, tuple[Sequence[int], int]],
) -> None:
    """Write ``dataset_info.json`` and ``features.json`` for the splits' shards (``splits``:
    each split's shard lengths and bytes, in the order ``builder.info.splits`` lists them)."""
    identity = tfds.core.DatasetIdentity(
        name=name, version=version, data_dir=str(data_dir), module_name="rlds_studio.export"
    )
    info = tfds.core.DatasetInfo(
        builder=identity,
        description=description,
        features=features,
        metadata=tfds.core.MetadataDict(metadata),
    )
    infos = []
    for split, (shard_lengths, num_bytes) in splits.items():
        template = tfds.core.naming.ShardedFileTemplate(
            data_dir=data_dir,
            template=FILE_TEMPLATE,
            dataset_name=name,
            split=split,
            filetype_suffix="tfrecord",
        )
        infos.append(
            tfds.core.SplitInfo(
                name=split,
                shard_lengths=list(shard_lengths),
                num_bytes=num_bytes,
                filename_template=template,
            )
        )
    info.set_splits(tfds.core.SplitDict(infos))
    info.write_to_directory(data_dir)
