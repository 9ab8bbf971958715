"""An episode log's steps decoded with the same values as envlogger's reader, in less time.

envlogger's ``codec.decode`` tries every typed list of a ``Datum`` in turn (a dozen protobuf
field accesses per value); :func:`decode_datum` asks the message which one field it holds
(``ListFields``) and decodes that one by envlogger's own rules, so a step of a Pong log
(nine values) decodes in about half the time. A datum holding no field is None (as
envlogger decodes it); one holding several goes to envlogger's own ``decode_datum``, whose
rules say which one wins. tests/export/
test_step_reader.py checks the results against ``codec.decode`` value for value and type for
type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from server.recording._envlogger import codec, storage_pb2

# typed lists: dtype (envlogger's order and types)
_LISTS: dict[str, Any] = {
    "float_values": np.float32,
    "double_values": np.float64,
    "int32_values": np.int32,
    "int64_values": np.int64,
    "uint32_values": np.uint32,
    "uint64_values": np.uint64,
    "bool_values": bool,
}
# values packed in bytes: dtype, big-endian numpy code, struct of one value
_PACKED: dict[str, tuple[Any, str, Any]] = {
    "float_values_buffer": (np.float32, ">f", codec.float32struct),
    "int8_values": (np.int8, ">b", codec.int8struct),
    "int16_values": (np.int16, ">h", codec.int16struct),
    "uint8_values": (np.uint8, ">B", codec.uint8struct),
    "uint16_values": (np.uint16, ">H", codec.uint16struct),
}
_SCALAR = codec._SCALAR_DIM_SIZE  # noqa: SLF001 - envlogger's marker of a scalar


def decode_datum(datum: Any) -> Any:
    """``codec.decode_datum(datum)``: a numpy array or scalar, a str or bytes."""
    fields = datum.values.ListFields()
    if len(fields) != 1:
        # no value at all (a first step's reward): None, as envlogger decodes it
        return None if not fields else codec.decode_datum(datum)
    field, values = fields[0]
    name = field.name
    shape = [dim.size for dim in datum.shape.dim]
    scalar = len(shape) == 1 and shape[0] == _SCALAR
    if name in _LISTS:
        dtype = _LISTS[name]
        if scalar:
            return dtype(values[0])
        array = np.array(values, dtype=dtype)
    elif name in _PACKED:
        dtype, code, one = _PACKED[name]
        if scalar:
            return dtype(one.unpack(values)[0])
        array = np.frombuffer(values, dtype=code).astype(dtype)
    elif name in ("string_values", "bytes_values"):
        if scalar:
            return values[0]
        array = np.array(list(values), dtype=object)
    elif name == "bigint_values" and scalar:  # a step type
        return int.from_bytes(values[0], byteorder="big", signed=True)
    else:  # several big ints, or a field this envlogger does not know
        return codec.decode_datum(datum)
    return np.reshape(array, shape)


def decode(data: Any) -> Any:
    """``codec.decode(data)`` for a ``storage_pb2.Data``: nested lists, tuples and dicts."""
    kind = data.WhichOneof("value")
    if kind == "datum":
        return decode_datum(data.datum)
    if kind == "array":
        return [decode(x) for x in data.array.values]
    if kind == "tuple":
        return tuple(decode(x) for x in data.tuple.values)
    if kind == "dict":
        out = {k: decode(x) for k, x in data.dict.values.items()}
        kvs = {decode(t.tuple.values[0]): decode(t.tuple.values[1]) for t in data.dict.kvs.values}
        out.update(kvs)
        return out
    return None


def read_steps(reader: Any) -> list[Any]:
    """Every ``StepData`` of an open ``envlogger.Reader``, as ``list(reader.steps)`` gives
    them. Only a Riegeli log is read this way (envlogger's reader otherwise)."""
    backend = getattr(reader, "_backend", None)
    dataset = getattr(backend, "_reader", None)
    to_step = getattr(backend, "_decode_step_data", None)
    if dataset is None or to_step is None or not hasattr(dataset, "serialized_step"):
        return list(reader.steps)
    parse = storage_pb2.Data.FromString
    return [to_step(decode(parse(dataset.serialized_step(i)))) for i in range(dataset.num_steps)]
