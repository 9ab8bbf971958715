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

from typing import Any

import numpy as np

from server.recording._envlogger import codec, storage_pb2

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
