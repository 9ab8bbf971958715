"""Serialized ``tf.train.Example`` bytes of an encoded example, written directly.

TFDS's ``ExampleSerializer`` builds a protobuf message (a ``Feature`` per key, each value
converted by numpy, then by protobuf one number at a time) and serializes it; for an episode
of a few dozen steps and fields that costs more than reading its log. :class:`ExampleWriter`
writes the same bytes as ``SerializeToString(deterministic=True)`` of TFDS's message from
numpy arrays: the map entries in key order, floats packed little-endian, integers as packed
varints, strings length-prefixed. It writes what an RLDS episode holds (tensors and
one-level sequences of them); for any other feature (optional, ragged) or value it would have
to convert differently it returns None, and the caller uses TFDS's serializer, which also
gives TFDS's errors. tests/export/test_tf_example.py compares both byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from tensorflow_datasets.core.utils import py_utils

from server.recording.protowire import ONE_BYTE, varint

_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)  # a varint's 7-bit groups, at most 10
_FEW = 32  # integers varint-encoded one by one below this many (numpy's fixed cost)


def varints(values: np.ndarray) -> bytes:
    """The int64 ``values`` as concatenated varints (a negative number takes 10 bytes, as
    protobuf writes an int64)."""
    ints = values.astype(np.int64, copy=False).reshape(-1)
    if ints.size < _FEW:
        return b"".join([varint(n) for n in ints.tolist()])
    u = ints.view(np.uint64)
    if int(u.max()) < 0x80:
        return u.astype(np.uint8).tobytes()  # one byte each
    groups = (u[:, None] >> _SHIFTS) & np.uint64(0x7F)  # n x 10, low groups first
    # bytes per value: up to its highest non-zero group (at least one)
    nonzero = groups != 0
    count = np.where(nonzero.any(axis=1), 9 - np.argmax(nonzero[:, ::-1], axis=1), 0) + 1
    used = np.arange(10) < count[:, None]
    more = np.arange(10) < (count - 1)[:, None]  # every byte but a value's last
    out = groups.astype(np.uint8) | (more.astype(np.uint8) << 7)
    return out[used].tobytes()  # row by row: each value's bytes in order


def _head(tag: int, size: int) -> bytes:
    """The key and length of a length-delimited field (wire type 2) of ``size`` bytes."""
    return ONE_BYTE[(tag << 3) | 2] + varint(size)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field with ``tag``'s number."""
    return _head(tag, len(payload)) + payload


def _strings(item: Any, shape: tuple[Any, ...]) -> list[bytes] | None:
    """A string feature's values as bytes (None: other values than str and bytes)."""
    array = _shaped(item, np.dtype(object), shape)
    if array is None:
        return None
    out = []
    for value in array.flat:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()  # a step's value, as TFDS's Text feature encodes it
        if isinstance(value, str):
            value = value.encode("utf-8")
        elif not isinstance(value, bytes):
            return None
        out.append(value)
    return out


def _shaped(item: Any, dtype: np.dtype, shape: tuple[Any, ...]) -> np.ndarray | None:
    """``item`` as TFDS converts it (None: not of ``shape``)."""
    try:
        array = np.asarray(item, dtype=dtype)
    except (TypeError, ValueError):
        return None
    if array.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(array.shape, shape, strict=True)
    ):
        return None
    return array


def _feature(item: Any, info: Any) -> tuple[list[bytes], int] | None:
    """One ``tf.train.Feature``'s bytes, in parts (a string's bytes are a part of their
    own: not copied before the record is joined), and their size (None: not written here)."""
    dtype, shape = np.dtype(info.np_dtype), tuple(info.shape)
    if dtype.kind in "OSU":
        strings = _strings(item, shape)
        if strings is None:
            return None
        parts = [b""]  # BytesList's head, below
        for value in strings:
            parts += (b"\n" + varint(len(value)), value)  # field 1 each
        size = sum(map(len, parts))
        parts[0] = _head(1, size)  # BytesList
        return parts, len(parts[0]) + size
    array = _shaped(item, dtype, shape)
    if array is None:
        return None
    if dtype.kind in "biu":
        data = varints(array.view(np.int64) if dtype == np.uint64 else array)
        feature = _field(3, _field(1, data) if data else b"")  # Int64List, packed
    elif dtype.kind == "f":
        data = array.astype("<f4", copy=False).tobytes()
        feature = _field(2, _field(1, data) if data else b"")  # FloatList, packed
    else:
        return None
    return [feature], len(feature)


class ExampleWriter:
    """Serializes encoded examples (``FeaturesDict.encode_example``'s output) of one
    FeaturesDict's ``get_serialized_info()``."""

    def __init__(self, serialized_info: Any) -> None:
        flat = py_utils.flatten_nest_dict(serialized_info)
        # protobuf's deterministic order of map entries: by the keys' bytes
        self._specs = sorted(((k.encode("utf-8"), k, v) for k, v in flat.items()))
        self.supported = all(
            not info.optional and info.sequence_rank <= 1 for _b, _k, info in self._specs
        )

    def serialize(self, encoded: Mapping[str, Any]) -> bytes | None:
        """The serialized ``tf.train.Example``, as TFDS's deterministically serialized one;
        None where TFDS's serializer must do it."""
        if not self.supported:
            return None
        flat = py_utils.flatten_nest_dict(encoded)
        parts = [b""]  # Example.features' head, below
        for key, name, info in self._specs:
            if name not in flat:
                return None
            feature = _feature(flat[name], info)
            if feature is None:
                return None
            values, size = feature
            key_field, value_head = _field(1, key), _head(2, size)  # the map entry's
            parts += (_head(1, len(key_field) + len(value_head) + size), key_field, value_head)
            parts += values
        parts[0] = _head(1, sum(map(len, parts)))
        return b"".join(parts)  # each byte copied once
