"""Minari datasets (arrow storage), written with pyarrow: no minari import on the server.

Layout read by ``minari.load_dataset("<name>-v<major>")`` with ``MINARI_DATASETS_PATH`` set to
the export folder (minari 0.5.x)::

    <name>-v<major>/data/metadata.json               dataset: spaces, counts, format, ids
    <name>-v<major>/data/<i>/part-0.arrow            episode i: one Arrow IPC file, n rows
    <name>-v<major>/data/<i>/metadata.json           episode i: our episode metadata

An episode of n RLDS steps has n observations and n - 1 transitions. Minari stores n rows
(actions, rewards, terminations and truncations padded on the last row, dropped when read).
Images are stored as raw uint8 arrays (``jpeg_encoding: false``), so every value is exact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from dm_env import specs as dm_specs

from server.export.columns import check_range, control_values, timing_column
from server.export.episode import EnvSpecs, RldsEpisode
from server.export.errors import ExportError
from server.export.fields import tag_field
from server.export.timings import TIMING_FLOAT_KEYS, TIMING_KEYS

MINARI_VERSION = "0.5.4"  # the dataset version minari 0.4.0 .. 0.5.4 accept


def dataset_id(name: str, version: str) -> str:
    """Minari's ``<name>-v<int>`` id of an export (the version's major number)."""
    return f"{name}-v{int(version.split('.')[0])}"


def _bounds(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """A Box bound as (nested) Python numbers of ``shape``."""
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), shape)
    if dtype.kind in "iu":
        return arr.astype(np.int64).tolist()
    # json writes infinities as Infinity, which Python's json (and minari) reads back.
    return arr.tolist() if shape else float(arr)


def space_of(spec: Any, where: str, *, bounds: bool = True) -> dict[str, Any]:
    """Minari's serialized Gymnasium space for a dm_env spec; refuses what it cannot hold.
    ``bounds=False``: only the check (a Box's ``low`` and ``high`` are left out: for an image
    they are lists of every pixel's bounds, slow to build)."""
    if isinstance(spec, dict):
        subspaces = {str(k): space_of(s, f"{where}/{k}", bounds=bounds) for k, s in spec.items()}
        return {"type": "Dict", "subspaces": subspaces}
    if isinstance(spec, list | tuple):
        raise ExportError(f"field {where}: tuple spaces cannot be exported (use a Dict space)")
    if isinstance(spec, dm_specs.DiscreteArray):
        return {"type": "Discrete", "dtype": "int64", "start": 0, "n": int(spec.num_values)}
    if not isinstance(spec, dm_specs.Array):
        raise ExportError(f"field {where}: unsupported spec {spec!r}")
    dtype = np.dtype(spec.dtype)
    if dtype.kind not in "iuf":
        raise ExportError(
            f"field {where}: {dtype} values have no Minari space (only integer and float "
            "arrays, Discrete and Dict); export it in the RLDS format"
        )
    shape = tuple(int(d) for d in spec.shape)
    if not bounds:
        return {"type": "Box", "dtype": str(dtype), "shape": list(shape)}
    if isinstance(spec, dm_specs.BoundedArray):
        low, high = spec.minimum, spec.maximum
    elif dtype.kind == "f":
        low, high = -math.inf, math.inf
    else:
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    low_v, high_v = _bounds(low, shape, dtype), _bounds(high, shape, dtype)
    return {"type": "Box", "dtype": str(dtype), "shape": list(shape), "low": low_v, "high": high_v}


def check_specs(specs: EnvSpecs, *, bounds: bool = True) -> dict[str, dict[str, Any]]:
    """The observation and action spaces, or an ExportError naming the field Minari can't hold
    (``bounds``: see :func:`space_of`)."""
    for name, spec in (("reward", specs.reward), ("discount", specs.discount)):
        if not isinstance(spec, dm_specs.Array) or tuple(spec.shape) != ():
            raise ExportError(f"field {name}: Minari holds scalar rewards only, not {spec!r}")
    return {
        "observation_space": space_of(specs.observation, "observation", bounds=bounds),
        "action_space": space_of(specs.action, "action", bounds=bounds),
    }


def _column(values: list[Any], spec: Any, where: str) -> pa.Array:
    """Per-step values of a spec as the Arrow column minari's arrow storage decodes."""
    if isinstance(spec, dict):
        keys = [str(k) for k in spec]
        arrays = [_column([v[k] for v in values], spec[k], f"{where}/{k}") for k in spec]
        return pa.StructArray.from_arrays(arrays, names=keys)
    stacked = np.stack([np.asarray(v) for v in values])
    if isinstance(spec, dm_specs.DiscreteArray):
        check_range(stacked, np.int64, where)
        return pa.array(stacked.reshape(-1).astype(np.int64), type=pa.int64())
    dtype = np.dtype(spec.dtype)
    if stacked.shape[1:] != tuple(spec.shape):
        raise ExportError(f"{where}: recorded shape {stacked.shape[1:]} != spec {spec.shape}")
    check_range(stacked, dtype, where)
    rows = stacked.astype(dtype, copy=False).reshape(len(values), -1)
    list_type = pa.list_(pa.from_numpy_dtype(dtype), list_size=rows.shape[1])
    return pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), type=list_type)


def _infos(
    episode: RldsEpisode,
    tag_cols: dict[str, np.ndarray],
    keep_step_metadata: bool,
    language: dict[str, list[str]],
) -> pa.StructArray | None:
    """Per-observation step metadata as flat info keys (minari decodes one struct level),
    and the ``language`` ones (``language_instruction``, ``narration``: strings)."""
    fields: dict[str, pa.Array] = {
        name: pa.array(values, type=pa.string()) for name, values in language.items()
    }
    if keep_step_metadata:
        fields["info"] = pa.array(episode.infos, type=pa.string())
        fields["input"] = pa.array(episode.inputs, type=pa.string())
        for key in (*TIMING_KEYS, *TIMING_FLOAT_KEYS):
            fields[f"timing/{key}"] = pa.array(timing_column(episode.timings, key))
        for name in ("source", "has_policy_action"):
            fields[f"control/{name}"] = pa.array(control_values(episode, name))
        for name, actions in (("human_action", episode.human_actions),
                              ("policy_action", episode.policy_actions)):  # fmt: skip
            fields[f"control/{name}"] = _column(actions, episode.specs.action, f"control/{name}")
        fields["camera"] = pa.array(episode.cameras, type=pa.string())
    for name, tagged in tag_cols.items():
        fields[tag_field(name)] = pa.array(tagged, type=pa.bool_())
    if not fields:
        return None
    return pa.StructArray.from_arrays(list(fields.values()), names=list(fields))


def episode_batch(
    episode: RldsEpisode,
    tag_cols: dict[str, np.ndarray],
    keep_step_metadata: bool,
    language: dict[str, list[str]] | None = None,
) -> pa.RecordBatch:
    """One episode's rows (n observations; the last row's transition is padding);
    ``language``: per-observation text infos (``language_instruction``, ``narration``)."""
    n = len(episode)
    specs = episode.specs
    rewards = np.asarray([np.asarray(r).item() for r in episode.rewards], dtype=specs.reward.dtype)
    last = np.arange(n) == n - 2  # the transition into the last observation
    columns: dict[str, pa.Array] = {
        "observations": _column(episode.observations, specs.observation, "observation"),
        "actions": _column(episode.actions, specs.action, "action"),
        "rewards": pa.array(rewards),
        "terminations": pa.array(last & episode.terminated),
        "truncations": pa.array(last & (not episode.terminated)),
    }
    infos = _infos(episode, tag_cols, keep_step_metadata, language or {})
    if infos is not None:
        columns["infos"] = infos
    return pa.RecordBatch.from_pydict(columns)


def write_batch(data_dir: Path, index: int, batch: pa.RecordBatch, metadata: dict[str, Any]) -> int:
    """Write episode ``index`` (its :func:`episode_batch`); returns its transitions."""
    n = batch.num_rows
    folder = data_dir / str(index)
    folder.mkdir()
    with pa.OSFile(str(folder / "part-0.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
    doc = {"id": index, "total_steps": n - 1, **metadata}
    (folder / "metadata.json").write_text(json.dumps(doc))
    return n - 1


def write_dataset_metadata(
    data_dir: Path,
    *,
    dataset: str,
    spaces: dict[str, dict[str, Any]],
    total_episodes: int,
    total_steps: int,
    description: str,
) -> None:
    """The dataset's ``metadata.json`` (spaces as minari serializes them: JSON strings)."""
    size = sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file()) / 1e6
    doc = {
        "dataset_id": dataset,
        "minari_version": MINARI_VERSION,
        "data_format": "arrow",
        "jpeg_encoding": False,
        "total_episodes": total_episodes,
        "total_steps": total_steps,
        "dataset_size": round(size, 1),
        "observation_space": json.dumps(spaces["observation_space"]),
        "action_space": json.dumps(spaces["action_space"]),
        "author": ["RLDS Studio"],
        "description": description,
    }
    (data_dir / "metadata.json").write_text(json.dumps(doc))


def episode_metadata(meta: dict[str, Any], fields: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """Per-episode metadata.json fields: ours plus the log's (seed, env, config)."""
    out = dict(fields)
    for key in ("study_id", "env_id", "env_config"):
        if key in meta:
            out[key] = str(meta[key])
    seed = meta.get("seed")
    if isinstance(seed, int) and seed >= 0:
        out["seed"] = seed
    return out
