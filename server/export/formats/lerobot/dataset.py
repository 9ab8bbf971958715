"""LeRobot v3.0 datasets, written with pyarrow and PyAV: no torch or lerobot on the server.

Layout read by ``LeRobotDataset(repo_id, root=<export>/<name>)`` (lerobot 0.4.x)::

    meta/info.json                                codebase_version v3.0, fps, features, paths
    meta/stats.json                               min/max/mean/std/count/q01..q99 per feature
    meta/tasks.parquet                            task text (index) -> task_index
    meta/subtasks.parquet                         narration text (index) -> subtask_index
    meta/episodes/chunk-000/file-000.parquet      one row per episode: length, tasks, where
                                                  its rows and video frames are, our metadata
    data/chunk-XXX/file-YYY.parquet               one row per step, many episodes per file
    videos/<key>/chunk-XXX/file-YYY.mp4           the frames of the same episodes, in order

Mapping rule (``features_of``): a recorded field becomes one column named by its path with
dots. A single (non-Dict) observation is ``observation.state``, or ``observation.image`` when
it is an image; a Dict observation gives ``observation.<key>`` per leaf and
``observation.images.<key>`` for image leaves. An *image* is a uint8 array of shape
(H, W, 3) with H, W >= ``MIN_VIDEO_SIDE``: it becomes a video stream (lossless, see
:mod:`video`); any other array stays an exact column of its dtype (scalars as shape [1]).
The player's frames (step metadata) are the video ``observation.images.frame``. Actions are
``action`` (or ``action.<key>``) with their dtype. Refused before the job starts, naming the
field: Tuple spaces, arrays of more than 5 dimensions, strings other than scalars, complex
numbers and two fields mapped to one name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from dm_env import specs as dm_specs

from server.export.episode import EnvSpecs
from server.export.errors import ExportError
from server.export.fields import tag_field
from server.export.timings import TIMING_FLOAT_KEYS, TIMING_KEYS

CODEBASE_VERSION = "v3.0"
MIN_VIDEO_SIDE = 16
FRAME_KEY = "observation.images.frame"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE + ".parquet"
CHUNKS_SIZE = 1000  # files per chunk folder (lerobot's default)
HIL = "complementary_info"  # lerobot's prefix for human-in-the-loop fields
INTERVENTION_KEY = f"{HIL}.is_intervention"
DEFAULT_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")
TASKS_PATH = "meta/tasks.parquet"
# narrations per frame: the text (``narration``) and, as lerobot's subtask support reads
# it (lerobot 0.4.4: ``dataset[i]["subtask"]``), its index into meta/subtasks.parquet
NARRATION_KEY = "narration"
SUBTASK_INDEX = "subtask_index"
SUBTASKS_PATH = "meta/subtasks.parquet"


@dataclass(frozen=True)
class Column:
    """One LeRobot feature and where its values come from."""

    name: str
    source: str  # "observation", "action", "reward", ... or "frame" (the player's frames)
    path: tuple[str, ...]  # keys inside a Dict field
    dtype: str  # numpy dtype name, "bool", "string" or "video"
    shape: tuple[int, ...]  # LeRobot shape: scalars are (1,)
    spec_shape: tuple[int, ...] = ()

    @property
    def is_video(self) -> bool:
        return self.dtype == "video"


def _is_image(spec: Any) -> bool:
    shape = tuple(spec.shape)
    return (
        np.dtype(spec.dtype) == np.uint8
        and len(shape) == 3
        and shape[2] == 3
        and min(shape[0], shape[1]) >= MIN_VIDEO_SIDE
    )


def _leaf(name: str, source: str, path: tuple[str, ...], spec: Any, where: str) -> Column:
    if isinstance(spec, list | tuple):
        raise ExportError(f"field {where}: Tuple spaces have no LeRobot column (use a Dict space)")
    if not isinstance(spec, dm_specs.Array):
        raise ExportError(f"field {where}: unsupported spec {spec!r}")
    # Discrete actions/observations are int64, as in the RLDS export
    dtype = np.dtype(np.int64 if isinstance(spec, dm_specs.DiscreteArray) else spec.dtype)
    shape = tuple(int(d) for d in spec.shape)
    if dtype.kind in "US" or dtype == np.dtype(object):
        if shape:
            raise ExportError(f"field {where}: LeRobot holds scalar strings only, not {shape}")
        return Column(name, source, path, "string", (1,), shape)
    if dtype.kind not in "biuf":
        raise ExportError(f"field {where}: {dtype} values have no LeRobot dtype")
    if len(shape) > 5:
        raise ExportError(f"field {where}: {len(shape)}-d arrays exceed LeRobot's 5 dimensions")
    if 0 in shape:
        raise ExportError(f"field {where}: an empty array shape {shape} has no LeRobot column")
    if source == "observation" and _is_image(spec):
        return Column(name, source, path, "video", shape, shape)
    return Column(
        name, source, path, "bool" if dtype.kind == "b" else dtype.name, shape or (1,), shape
    )


def _image_name(prefix: str, path: tuple[str, ...], single: bool) -> str:
    return f"{prefix}.image" if single else f"{prefix}.images." + ".".join(path)


def _walk(spec: Any, source: str, prefix: str, single_name: str) -> list[Column]:
    if not isinstance(spec, dict):
        col = _leaf(single_name, source, (), spec, source)
        if col.is_video:
            col = Column(_image_name(prefix, (), True), source, (), "video", col.shape, col.shape)
        return [col]
    out: list[Column] = []

    def visit(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for key, sub in node.items():
                visit(sub, (*path, str(key)))
            return
        where = f"{source}/" + "/".join(path)
        col = _leaf(f"{prefix}." + ".".join(path), source, path, node, where)
        if col.is_video:
            col = Column(
                _image_name(prefix, path, False), source, path, "video", col.shape, col.shape
            )
        out.append(col)

    visit(spec, ())
    return out


def control_columns(specs: EnvSpecs) -> list[Column]:
    """Shared autonomy, the way LeRobot's human-in-the-loop recording marks it:
    ``complementary_info.is_intervention`` (float32, 1 where the player drove) and
    ``complementary_info.policy_action``; besides them the player's mapped action, the
    control source (int8: 0 the player, 1 the policy) and whether the policy proposed one."""
    cols = [
        Column(INTERVENTION_KEY, "control", ("is_intervention",), "float32", (1,)),
        Column(f"{HIL}.control_source", "control", ("source",), "int8", (1,)),
        Column(f"{HIL}.has_policy_action", "control", ("has_policy_action",), "bool", (1,)),
    ]
    for source in ("human_action", "policy_action"):
        cols += _walk(specs.action, source, f"{HIL}.{source}", f"{HIL}.{source}")
    return cols


def features_of(
    specs: EnvSpecs, *, keep_step_metadata: bool, tag_names: Sequence[str]
) -> list[Column]:
    """The dataset's columns (see the module doc); raises naming a field it cannot hold."""
    cols = _walk(specs.observation, "observation", "observation", "observation.state")
    cols += _walk(specs.action, "action", "action", "action")
    for source, name, spec in (
        ("reward", "next.reward", specs.reward),
        ("discount", "discount", specs.discount),
    ):
        col = _leaf(name, source, (), spec, source)
        if col.dtype in ("string", "bool"):
            raise ExportError(f"field {source}: {col.dtype} values are not numbers")
        cols.append(col)
    cols += [
        Column("next.done", "is_last", (), "bool", (1,)),
        Column("is_first", "is_first", (), "bool", (1,)),
        Column("is_last", "is_last", (), "bool", (1,)),
        Column("is_terminal", "is_terminal", (), "bool", (1,)),
    ]
    if keep_step_metadata:
        cols += [
            Column("info", "info", (), "string", (1,)),
            Column("input", "input", (), "string", (1,)),
            Column("camera", "camera", (), "string", (1,)),
        ]
        cols += [Column(f"timing.{k}", "timing", (k,), "int64", (1,)) for k in TIMING_KEYS]
        cols += [Column(f"timing.{k}", "timing", (k,), "float64", (1,)) for k in TIMING_FLOAT_KEYS]
        cols += control_columns(specs)
        cols.append(Column(FRAME_KEY, "frame", (), "video", (0, 0, 3)))
    for name in sorted(set(tag_names)):
        if "/" in name:
            raise ExportError(f"step tag {name!r}: LeRobot feature names cannot hold '/'")
        cols.append(Column(tag_field(name), "tag", (name,), "bool", (1,)))
    cols.append(Column(NARRATION_KEY, "narration", (), "string", (1,)))
    seen: dict[str, Column] = {}
    for col in cols:
        taken = (*DEFAULT_FEATURES, SUBTASK_INDEX)
        if col.name in taken or col.name in seen or "/" in col.name:
            raise ExportError(
                f"field {col.source}/{'/'.join(col.path)}: its LeRobot name {col.name!r} is "
                "taken or invalid; rename the key"
            )
        seen[col.name] = col
    return cols


# --- values ------------------------------------------------------------------------------
def _base_type(col: Column) -> pa.DataType:
    return pa.bool_() if col.dtype == "bool" else pa.from_numpy_dtype(np.dtype(col.dtype))


def arrow_column(col: Column, values: np.ndarray | list[Any]) -> pa.Array:
    """Per-step values of one non-video column as Arrow (values stacked over steps)."""
    if col.dtype == "string":
        return pa.array([str(v) for v in values], type=pa.string())
    arr = np.asarray(values)
    n = arr.shape[0]
    base = _base_type(col)
    if col.shape == (1,):
        return pa.array(arr.reshape(n), type=base)
    flat = pa.array(arr.reshape(-1), type=base)
    if len(col.shape) == 1:
        return pa.FixedSizeListArray.from_arrays(flat, col.shape[0])
    dims = (n, *col.shape)
    out: pa.Array = flat
    for level in range(len(col.shape)):  # innermost dimension first
        dim = dims[-1 - level]
        count = int(np.prod(dims[: -1 - level]))
        offsets = pa.array(np.arange(count + 1, dtype=np.int64) * dim, type=pa.int32())
        out = pa.ListArray.from_arrays(offsets, out)
    return out


def feature_doc(col: Column, video_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The feature's entry in info.json."""
    if col.is_video:
        doc: dict[str, Any] = {
            "dtype": "video",
            "shape": list(col.shape),
            "names": ["height", "width", "channels"],
        }
        if video_info:
            doc["info"] = video_info
        return doc
    names: Any = None
    if len(col.shape) == 1 and col.shape != (1,):
        names = [f"{col.name.split('.')[-1]}_{i}" for i in range(col.shape[0])]
    return {"dtype": col.dtype, "shape": list(col.shape), "names": names}


def video_feature_doc(col: Column, shape: tuple[int, int, int], fps: int) -> dict[str, Any]:
    """A video feature's entry in info.json, its frames ``shape`` (H x W x 3) and ``fps``
    known (lossless H.264 of RGB frames, decoded as planar RGB)."""
    h, w, _ = shape
    col = Column(col.name, col.source, col.path, "video", (h, w, 3), (h, w, 3))
    info = {
        "video.height": h,
        "video.width": w,
        "video.codec": "h264",
        "video.pix_fmt": "gbrp",
        "video.is_depth_map": False,
        "video.fps": fps,
        "video.channels": 3,
        "has_audio": False,
    }
    return feature_doc(col, info)


DEFAULT_FEATURE_DOCS = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
    SUBTASK_INDEX: {"dtype": "int64", "shape": [1], "names": None},
}


# --- metadata files ---------------------------------------------------------------------
def write_table(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="snappy")


def write_tasks(root: Path, tasks: Sequence[str]) -> None:
    """meta/tasks.parquet: text -> ``task_index`` (see :func:`write_text_index`)."""
    write_text_index(root / TASKS_PATH, "task", tasks)


def write_subtasks(root: Path, subtasks: Sequence[str]) -> None:
    """meta/subtasks.parquet: narration text -> ``subtask_index`` (lerobot >= 0.4.4 gives a
    frame's ``subtask`` from it: see docs/export.md, "LeRobot format")."""
    write_text_index(root / SUBTASKS_PATH, "subtask", subtasks)


def write_text_index(path: Path, key: str, texts: Sequence[str]) -> None:
    """A parquet file as pandas writes a frame indexed by text, with the text's position as
    ``<key>_index`` (lerobot reads it with ``pd.read_parquet``: the ``<key>`` column is the
    index, and ``frame.iloc[i].name`` the text of index ``i``)."""
    index = f"{key}_index"

    def column(name: str, kind: str) -> dict[str, Any]:
        numpy_type = "int64" if kind == "int64" else "object"
        return {"name": name, "field_name": name, "pandas_type": kind,
                "numpy_type": numpy_type, "metadata": None}  # fmt: skip

    pandas_meta = {
        "index_columns": [key],
        "column_indexes": [
            {
                "name": None,
                "field_name": None,
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": {"encoding": "UTF-8"},
            }
        ],
        "columns": [column(index, "int64"), column(key, "unicode")],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.3",
    }
    table = pa.table(
        {
            index: pa.array(range(len(texts)), type=pa.int64()),
            key: pa.array(list(texts), type=pa.string()),
        }
    ).replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
    write_table(path, table)


def write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, allow_nan=False))
