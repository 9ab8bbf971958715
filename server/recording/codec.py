"""A faster, equal-output replacement for ``envlogger.converters.codec.encode``.

envlogger encodes every step as a tree of ``storage_pb2.Data`` messages. Its codec builds
each sub-message on its own and copies it into its parent (``CopyFrom``), so a step's
observation is copied once per level, and it finds each scalar's type through
``np.result_type``. Per recorded step that was the largest single cost in a worker
(``docs/performance.md``). :func:`encode_into` fills one message in place, dispatches the
scalar types a step holds by exact type, and leaves everything else to envlogger's own
functions, so the message it builds is equal to ``codec.encode``'s
(``tests/recording/test_codec.py`` checks both agree value by value).
"""

from __future__ import annotations

import enum
import struct
from typing import Any

import numpy as np

from server.recording.envlogger_log import codec, storage_pb2
from server.recording.protowire import key, varint

_SCALAR = codec._SCALAR_DIM_SIZE  # noqa: SLF001 - envlogger's marker for a scalar datum

# Exact scalar types → the repeated field ``codec`` appends them to.
_REPEATED = {
    float: "double_values",
    np.float64: "double_values",
    np.float32: "float_values",
    np.int64: "int64_values",
    np.int32: "int32_values",
    np.uint64: "uint64_values",
    np.uint32: "uint32_values",
    bytes: "bytes_values",
    str: "string_values",
}


# Arrays of these exact dtypes → (field, how), where envlogger's codec finds the field by a
# chain of ``np.issubdtype`` and copies twice (``astype`` then ``tobytes``): one-byte types
# need no byte swap, and a repeated field takes the array's values as a list at once.
_BYTES = "bytes"
_LIST = "list"
_ARRAY_FIELDS = {
    np.dtype(np.uint8): ("uint8_values", _BYTES),
    np.dtype(np.int8): ("int8_values", _BYTES),
    np.dtype(np.float64): ("double_values", _LIST),
    np.dtype(np.int32): ("int32_values", _LIST),
    np.dtype(np.int64): ("int64_values", _LIST),
    np.dtype(np.uint32): ("uint32_values", _LIST),
    np.dtype(np.uint64): ("uint64_values", _LIST),
    np.dtype(np.bool_): ("bool_values", _LIST),
}


def _set_values(array: np.ndarray, values: Any) -> None:
    """``codec._set_datum_values_from_array``, with the same result, faster for the dtypes
    of :data:`_ARRAY_FIELDS` (native byte order only: the others go envlogger's way)."""
    found = _ARRAY_FIELDS.get(array.dtype)
    if found is None:
        codec._set_datum_values_from_array(array, values)  # noqa: SLF001
    elif found[1] is _BYTES:
        setattr(values, found[0], array.tobytes())
    elif array.size:  # (an empty one leaves ``values`` unset, as envlogger's loop does)
        getattr(values, found[0]).extend(array.ravel().tolist())


def encode(value: Any) -> Any:
    """``value`` as a ``storage_pb2.Data`` message, equal to ``codec.encode(value)``."""
    out = storage_pb2.Data()
    encode_into(value, out)
    return out


def encode_into(value: Any, out: Any) -> None:
    """Fill the empty ``storage_pb2.Data`` message ``out`` with ``value``."""
    if value is None:
        return
    kind = type(value)
    if kind is np.ndarray:
        datum = out.datum
        for dim in value.shape:
            if dim > 0:
                datum.shape.dim.add().size = dim
        _set_values(value, datum.values)
    elif isinstance(value, tuple):  # dm_env.TimeStep and StepData are named tuples
        if value:
            items = out.tuple.values
            for item in value:
                encode_into(item, items.add())
    elif kind is dict and all(type(key) is str for key in value):
        entries = out.dict.values
        for key, item in value.items():
            encode_into(item, entries[key])
    elif kind in _REPEATED:
        datum = out.datum
        datum.shape.dim.add().size = _SCALAR
        getattr(datum.values, _REPEATED[kind]).append(value)
    else:  # lists, other scalars (ints, bools, small ints), dict subclasses: envlogger's way
        out.CopyFrom(codec.encode(value))


# -- the wire form, built directly -----------------------------------------------------------
# A step's Data message as bytes, without building the message first: the observation's
# bytes are copied once, into the joined message, where ``encode(...).SerializeToString()``
# copies them into the message, then out of it. A message is built as a list of parts (a
# field's key and length before its contents' parts), joined once. The parts a step is made
# of (tuples, string-keyed dicts, uint8/int8 images, floats, text and bytes, int64 scalars)
# are written here; anything else is ``encode``'s message, serialized, in its place (a
# sub-message's bytes are the same wherever they sit). ``tests/recording/test_codec.py``
# parses the bytes back and compares them with envlogger's codec, value by value.
Parts = tuple[int, list[Any]]  # (size in bytes, the parts: bytes or C-contiguous arrays)


def _field(tag: bytes, inner: Parts) -> Parts:
    """The field of key ``tag`` holding ``inner``: key, length, contents."""
    head = tag + varint(inner[0])
    return len(head) + inner[0], [head, *inner[1]]


def _bytes_field(tag: bytes, payload: bytes) -> bytes:
    return tag + varint(len(payload)) + payload


# Data's fields: datum, tuple (Tuple.values and a Dict's map entries are field 1 of theirs);
# Datum's: shape, values (Shape.dim is 2); a map entry's: key, value.
_DATUM, _TUPLE, _DICT, _ITEM = key(1), key(3), key(4), key(1)
_SHAPE, _VALUES, _DIM, _ENTRY_KEY, _ENTRY_VALUE = key(1), key(2), key(2), key(1), key(2)
# A scalar datum's shape: one dim (Dim.size, a varint field 1) of envlogger's scalar marker.
_SCALAR_SHAPE = _bytes_field(_SHAPE, _bytes_field(_DIM, b"\x08" + varint(_SCALAR)))
# Datum.Values' fields: double_values (packed), int64_values (packed), strings, bytes, and
# the bytes of one-byte arrays.
_DOUBLES, _INT64S, _STRINGS, _BYTES_VALUES = key(2), key(4), key(8), key(9)
_IMAGE_FIELDS = {np.dtype(np.uint8): key(13), np.dtype(np.int8): key(11)}
_DOUBLE = struct.Struct("<d")


def _scalar(values: bytes) -> Parts:
    """A Data message of one scalar datum whose Datum.Values are ``values``."""
    body = _bytes_field(_DATUM, _SCALAR_SHAPE + _bytes_field(_VALUES, values))
    return len(body), [body]


def _wire_float(value: Any) -> Parts:
    return _scalar(_bytes_field(_DOUBLES, _DOUBLE.pack(value)))


def _wire_int64(value: Any) -> Parts:
    return _scalar(_bytes_field(_INT64S, varint(int(value))))


def _wire_bytes(value: Any) -> Parts:
    return _scalar(_bytes_field(_BYTES_VALUES, value))


def _wire_str(value: Any) -> Parts:
    return _scalar(_bytes_field(_STRINGS, value.encode()))


_WIRE_SCALARS = {
    float: _wire_float,
    np.float64: _wire_float,
    np.int64: _wire_int64,
    bytes: _wire_bytes,
    str: _wire_str,
}
_CACHED: dict[Any, Parts] = {}  # enum members (dm_env's step types): their message, once
_EMPTY: Parts = (0, [])


def _image(array: np.ndarray, field: bytes) -> Parts:
    """Data.datum of a one-byte array: its shape's dims, then its bytes (the array itself,
    joined at the end)."""
    dims = b"".join(_bytes_field(_DIM, b"\x08" + varint(dim)) for dim in array.shape)
    data = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    values = _field(_VALUES, _field(field, (array.nbytes, [data])))
    shape = _bytes_field(_SHAPE, dims) if dims else b""  # (a 0-d array's shape is unset)
    return _field(_DATUM, (len(shape) + values[0], [shape, *values[1]]))


def _parts(value: Any) -> Parts:
    kind = type(value)
    wire = _WIRE_SCALARS.get(kind)
    if wire is not None:
        return wire(value)
    if kind is np.ndarray:
        field = _IMAGE_FIELDS.get(value.dtype)
        if field is not None and value.size:
            return _image(value, field)
    elif isinstance(value, tuple):  # dm_env.TimeStep and StepData are named tuples
        if not value:
            return _EMPTY
        return _field(_TUPLE, _join([_field(_ITEM, _parts(item)) for item in value]))
    elif kind is dict and value and all(type(name) is str for name in value):
        entries = []
        for name, item in value.items():
            head = _bytes_field(_ENTRY_KEY, name.encode())
            inner = _field(_ENTRY_VALUE, _parts(item))
            entries.append(_field(_ITEM, (len(head) + inner[0], [head, *inner[1]])))
        return _field(_DICT, _join(entries))
    elif value is None:
        return _EMPTY
    elif isinstance(value, enum.Enum):
        cached = _CACHED.get(value)
        if cached is None:
            body = encode(value).SerializeToString()
            cached = _CACHED[value] = (len(body), [body])
        return cached
    body = encode(value).SerializeToString()
    return len(body), [body]


def _join(items: list[Parts]) -> Parts:
    size, parts = 0, []
    for item in items:
        size += item[0]
        parts += item[1]
    return size, parts


def serialize(value: Any) -> bytes:
    """``encode(value)`` serialized, built without the message (see above)."""
    return b"".join(_parts(value)[1])


class Serialized:
    """A serialized ``Data`` message where envlogger's writer takes a message: the writer's
    binding asks the Python message for ``SerializeToString()`` and parses that in C++
    anyway, so it takes these bytes as they are (``tests/recording/test_codec.py``)."""

    __slots__ = ("body",)
    DESCRIPTOR = storage_pb2.Data.DESCRIPTOR

    def __init__(self, body: bytes) -> None:
        self.body = body

    def SerializeToString(self, **_: Any) -> bytes:  # noqa: N802 - the protobuf API's name
        return self.body
