"""Turning a realigned episode into one serialized ``tf.train.Example``, without TensorFlow.

TFDS's ``FeaturesDict.encode_example`` and ``ExampleSerializer`` work without TensorFlow once
images are encoded bytes, so image observations are encoded to PNG here (lossless: see
:func:`encode_png`).
Numbers are checked first (TFDS silently truncates integers that do not fit their dtype, and
fails on others with a bare OverflowError): an error names the step and the field.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from dm_env import specs as dm_specs
from tensorflow_datasets.core import example_serializer
from tensorflow_datasets.core import features as tfds_features
from tensorflow_datasets.core.utils.py_utils import reraise, zip_dict

from server.export.columns import check_range, control_values, timing_column
from server.export.episode import RldsEpisode
from server.export.errors import ExportError, ValueOutOfRangeError
from server.export.fields import (
    ENDING_FIELDS,
    NARRATION_FIELD,
    OUTCOME_FIELDS,
    REPLAY_STEP_FIELD,
    REPLAY_TEXT_FIELDS,
    TASK_FIELDS,
    is_image_spec,
    tag_field,
)
from server.export.formats.rlds.tf_example import ExampleWriter
from server.export.judgements import JUDGED_FIELD, JUDGEMENT_COUNT_FIELDS, JUDGEMENT_MEAN_FIELD
from server.export.timings import TIMING_FLOAT_KEYS, TIMING_KEYS

PNG_ZLIB_LEVEL = 3
_PNG_COLOR_TYPES = {1: 0, 3: 2, 4: 6}  # grey, RGB, RGBA; 8 bits per sample
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_UP = 2  # the filter type "Up": each byte minus the byte above it


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of a uint8 H x W x C image (C = 1, 3 or 4): lossless, written directly.

    Every row is filtered with "Up" (its difference from the row above, the first row
    against zeros) and the rows are deflated at zlib level :data:`PNG_ZLIB_LEVEL`, in one
    IDAT chunk. Any PNG decoder (TensorFlow's, Pillow's) returns exactly ``image``. About
    twice as fast as Pillow's encoder at its fastest level, for files of about the same size
    (docs/performance.md, "Export throughput"); numpy and zlib release the GIL, so the
    export's threads encode on several cores.
    """
    height, width, channels = image.shape
    rows = np.ascontiguousarray(image, dtype=np.uint8).reshape(height, width * channels)
    filtered = np.empty((height, width * channels + 1), dtype=np.uint8)
    filtered[:, 0] = _PNG_UP
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # modulo 256, as PNG's filters
    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPES[channels], 0, 0, 0)
    return b"".join(
        (
            _PNG_SIGNATURE,
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(filtered.data, PNG_ZLIB_LEVEL)),
            _png_chunk(b"IEND", b""),
        )
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _leaf_column(values: list[Any], spec: Any, where: str) -> list[Any]:
    """Per-step values of one array spec, checked and ready for ``encode_example``."""
    dtype = np.int64 if isinstance(spec, dm_specs.DiscreteArray) else np.dtype(spec.dtype)
    if np.dtype(dtype).kind in "OUS":
        return [str(v) for v in values]
    if is_image_spec(spec) and all(_is_image(v, spec) for v in values):
        # what the checks below let through unchanged: encode without stacking a copy
        return [encode_png(v) for v in values]
    try:
        stacked = np.stack([np.asarray(v) for v in values])
    except ValueError as exc:
        raise ExportError(f"{where}: steps have different shapes ({exc})") from exc
    if stacked.shape[1:] != tuple(spec.shape):
        raise ExportError(f"{where}: recorded shape {stacked.shape[1:]} != spec {spec.shape}")
    check_range(stacked, dtype, where)
    if isinstance(spec, dm_specs.DiscreteArray):
        check_range(stacked, np.dtype(spec.dtype), where)
    if is_image_spec(spec):
        return [encode_png(np.asarray(image, dtype=np.uint8)) for image in stacked]
    return list(stacked.astype(dtype, copy=False))


def _is_image(value: Any, spec: Any) -> bool:
    """Whether ``value`` is already an image of ``spec`` (uint8 array of its shape)."""
    return (
        isinstance(value, np.ndarray)
        and value.dtype == np.uint8
        and value.shape == tuple(spec.shape)
    )


def spec_column(values: list[Any], spec: Any, where: str) -> Any:
    """Per-step values of a nested spec as nested dicts of per-step lists."""
    if isinstance(spec, dict):
        return {
            str(k): spec_column([v[k] for v in values], s, f"{where}/{k}") for k, s in spec.items()
        }
    return _leaf_column(values, spec, where)


def episode_example(
    episode: RldsEpisode,
    metadata: Mapping[str, Any],
    *,
    keep_step_metadata: bool,
    tag_columns: Mapping[str, np.ndarray],
    narrations: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The example dict (episode metadata plus ``steps`` as dict of lists) to encode;
    ``narrations``: each step's narration (None: "" on every step)."""
    specs = episode.specs
    steps: dict[str, Any] = {
        "observation": spec_column(episode.observations, specs.observation, "observation"),
        "action": spec_column(episode.actions, specs.action, "action"),
        "reward": spec_column(episode.rewards, specs.reward, "reward"),
        "discount": spec_column(episode.discounts, specs.discount, "discount"),
        "is_first": list(episode.is_first),
        "is_last": list(episode.is_last),
        "is_terminal": list(episode.is_terminal),
    }
    if keep_step_metadata:
        if not all(episode.frames):
            # An empty JPEG would only fail later, when TensorFlow decodes it.
            raise ExportError("some steps have no recorded frame: export without step metadata")
        steps["frame"] = list(episode.frames)
        steps["input"] = list(episode.inputs)
        steps["info"] = list(episode.infos)
        steps["timing"] = {
            key: timing_column(episode.timings, key) for key in (*TIMING_KEYS, *TIMING_FLOAT_KEYS)
        }
        steps["control"] = {
            "source": control_values(episode, "source"),
            "human_action": spec_column(episode.human_actions, specs.action, "control/human"),
            "policy_action": spec_column(episode.policy_actions, specs.action, "control/policy"),
            "has_policy_action": list(episode.has_policy_action),
        }
        steps["camera"] = list(episode.cameras)
    for name, column in tag_columns.items():
        if len(column) != len(episode):
            raise ExportError(f"tag {name!r}: {len(column)} values for {len(episode)} steps")
        steps[tag_field(name)] = [bool(x) for x in column]
    texts = [""] * len(episode) if narrations is None else [str(t) for t in narrations]
    if len(texts) != len(episode):
        raise ExportError(f"narration: {len(texts)} values for {len(episode)} steps")
    steps[NARRATION_FIELD] = texts
    seed = metadata.get("seed")
    seed_value = -1 if seed is None else int(seed)
    if not -(2**63) <= seed_value < 2**63:
        raise ValueOutOfRangeError(f"field seed: {seed_value} does not fit int64")
    return {
        "steps": steps,
        "episode_id": str(metadata.get("episode_id", "")),
        "agent_id": str(metadata.get("agent_id", "")),
        "study_id": str(metadata.get("study_id", "")),
        "env_id": str(metadata.get("env_id", "")),
        "env_config": str(metadata.get("env_config", "")),
        "status": str(metadata.get("status", "")),
        "seed": seed_value,
        "tags": [str(t) for t in metadata.get("tags", ())],
        "notes": str(metadata.get("notes", "")),
        **{name: str(metadata.get(name, "")) for name in OUTCOME_FIELDS},
        **{name: str(metadata.get(name, "")) for name in REPLAY_TEXT_FIELDS},
        REPLAY_STEP_FIELD: int(metadata.get(REPLAY_STEP_FIELD, -1)),
        **{name: str(metadata.get(name, "")) for name in TASK_FIELDS},
        **{name: str(metadata.get(name, "")) for name in ENDING_FIELDS},
        **_judgement_values(metadata),
    }


def _judgement_values(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The judgement summary fields (server/export/judgements.py), zeros when absent."""
    values: dict[str, Any] = {JUDGED_FIELD: bool(metadata.get(JUDGED_FIELD, False))}
    for name in JUDGEMENT_COUNT_FIELDS:
        values[name] = int(metadata.get(name, 0))
    values[JUDGEMENT_MEAN_FIELD] = np.float64(metadata.get(JUDGEMENT_MEAN_FIELD, 0.0))
    return values


class EpisodeSerializer:
    """Encodes example dicts with a FeaturesDict and serializes them as tf.train.Example bytes."""

    def __init__(self, features: Any) -> None:
        self.features = features
        info = features.get_serialized_info()
        self._serializer = example_serializer.ExampleSerializer(info)
        self._writer = ExampleWriter(info)

    def serialize(self, example: dict[str, Any]) -> bytes:
        """The serialized ``tf.train.Example`` of one episode.

        Deterministic: the Example's feature map is written in key order. (protobuf's default
        order of map entries varies from one process to the next, so the same episode gave
        different bytes in each export process, and on each Beam worker.) Written directly
        (:mod:`server.export.formats.rlds.tf_example`) where it can be, else by TFDS: the
        same bytes.
        """
        encoded = encode_episode_example(self.features, example)
        record = self._writer.serialize(encoded)
        if record is not None:
            return record
        proto = self._serializer.get_tf_example(encoded)
        return bytes(proto.SerializeToString(deterministic=True))


_LEAVES = (tfds_features.Tensor, tfds_features.Image)  # Text and Scalar are Tensors


def encode_episode_example(features: Any, example: dict[str, Any]) -> dict[str, Any]:
    """``features.encode_example(example)``, the ``steps`` encoded a column at a time.

    TFDS's Dataset feature turns the columns into one dict per step, encodes each through
    the FeaturesDict and stacks them back into columns; encoding each leaf's column directly
    gives the same lists of the same values without the per-step dicts. Anything else (no
    ``steps``, another kind of feature inside, columns of different lengths, no step) goes
    through TFDS's own path."""
    steps = features["steps"] if "steps" in features.keys() else None
    columns = example.get("steps")
    if not (
        isinstance(steps, tfds_features.Dataset)
        and isinstance(columns, dict)
        and _columnar(steps.feature, columns, set())
    ):
        return features.encode_example(example)
    out = {}
    for key, (feature, value) in zip_dict(features._feature_dict, example):  # noqa: SLF001
        try:
            out[key] = (
                _encode_columns(feature.feature, value)
                if key == "steps"
                else feature.encode_example(value)
            )
        except Exception as exc:  # as FeaturesDict.encode_example says where
            reraise(exc, prefix=f'In <{feature.__class__.__name__}> with name "{key}":\n')
    return out


def _columnar(feature: Any, columns: Any, lengths: set[int]) -> bool:
    """Whether ``columns`` (per-step lists under a FeaturesDict) can be encoded by leaf."""
    if isinstance(feature, tfds_features.FeaturesDict):
        return (
            isinstance(columns, dict)
            and set(columns) == set(feature.keys())
            and all(_columnar(feature[k], columns[k], lengths) for k in columns)
        )
    if not isinstance(feature, _LEAVES) or not isinstance(columns, list | tuple | np.ndarray):
        return False
    lengths.add(len(columns))
    return len(lengths) == 1 and 0 not in lengths


def _encode_columns(feature: Any, columns: Any) -> Any:
    if isinstance(feature, tfds_features.FeaturesDict):
        out = {}
        for key, (sub, value) in zip_dict(feature._feature_dict, columns):  # noqa: SLF001
            try:
                out[key] = _encode_columns(sub, value)
            except Exception as exc:
                reraise(exc, prefix=f'In <{sub.__class__.__name__}> with name "{key}":\n')
        return out
    stacked = _tensor_column(feature, columns)
    if stacked is not None:
        return stacked
    return [feature.encode_example(value) for value in columns]


_PLAIN_TENSORS = (tfds_features.Tensor, tfds_features.Scalar, tfds_features.Text)


def _tensor_column(feature: Any, column: Any) -> Any:
    """A Tensor feature's column encoded at once: the steps' values stacked (or each one's
    bytes, for a tensor stored as bytes), what ``encode_example`` gives for each value one
    by one (an array, a value of the feature's dtype converted to it unchanged); None where
    values need its conversions or checks one at a time (other dtypes or shapes, optional,
    Text with an encoder...)."""
    if type(feature) not in _PLAIN_TENSORS or getattr(feature, "encoder", None) is not None:
        return None
    try:
        dtype = np.dtype(feature._serialized_dtype)  # noqa: SLF001 - what encode_example checks
        shape = feature._serialized_shape  # noqa: SLF001
        to_bytes = feature._encoded_to_bytes  # noqa: SLF001
        plain = not feature._optional and not feature._dynamic_shape  # noqa: SLF001
    except AttributeError:  # another TFDS
        return None
    if not plain or None in shape:
        return None
    if isinstance(column, np.ndarray):
        ok = column.dtype == dtype and column.shape[1:] == shape
        stacked = column if ok else None
    elif dtype == np.object_ and shape == ():
        ok = all(type(v) is str or type(v) is bytes for v in column)
        stacked = np.array(column, dtype=object) if ok else None
    elif dtype == np.bool_ and shape == ():
        stacked = np.array(column, dtype=bool) if all(type(v) is bool for v in column) else None
    elif shape == () and all(type(v) is dtype.type for v in column):  # numpy scalars
        stacked = np.array(column, dtype=dtype)
    else:
        ok = all(type(v) is np.ndarray and v.dtype == dtype and v.shape == shape for v in column)
        stacked = np.stack(column) if ok else None
    if stacked is None or not to_bytes:
        return stacked
    return [row.tobytes() for row in stacked]
