"""An episode log read with the same values as envlogger's reader, in less time.

envlogger's ``codec.decode`` tries every typed list of a ``Datum`` in turn (a dozen protobuf
field accesses per value); :func:`decode_datum` asks the message which one field it holds
(``ListFields``) and decodes that one by envlogger's own rules, so a step of a Pong log
(nine values) decodes in about half the time. A datum holding no field is None (as
envlogger decodes it); one holding several goes to envlogger's own ``decode_datum``, whose
rules say which one wins. :func:`read_log` opens a log without ``envlogger.Reader`` (which
decodes its metadata with ``codec.decode``). tests/export/test_step_reader.py checks the
results against ``codec.decode`` and the Reader, value for value and type for type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dm_env
import numpy as np

from server.recording.envlogger_log import codec, riegeli_dataset_reader, step_data, storage_pb2

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


def _decoders() -> tuple[dict[str, Any], dict[str, Any]]:
    """Per typed list: how a scalar datum's value and an array datum's values decode."""
    scalars: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    for name, dtype in _LISTS.items():
        scalars[name] = lambda values, t=dtype: t(values[0])
        arrays[name] = lambda values, t=dtype: np.array(values, dtype=t)
    for name, (dtype, code, one) in _PACKED.items():
        scalars[name] = lambda values, t=dtype, unpack=one.unpack: t(unpack(values)[0])
        arrays[name] = lambda values, t=dtype, c=code: np.frombuffer(values, dtype=c).astype(t)
    for name in ("string_values", "bytes_values"):
        scalars[name] = lambda values: values[0]
        arrays[name] = lambda values: np.array(list(values), dtype=object)
    # a step type; several big ints go to envlogger's codec (which refuses them)
    scalars["bigint_values"] = lambda values: int.from_bytes(values[0], "big", signed=True)
    return scalars, arrays


def _by_field(decoders: dict[str, Any]) -> dict[Any, Any]:
    """``decoders`` keyed by the typed lists' field descriptors (what ``ListFields`` gives)."""
    fields = storage_pb2.Datum.DESCRIPTOR.fields_by_name["values"].message_type.fields
    return {f: decoders[f.name] for f in fields if f.name in decoders}


_SCALARS, _ARRAYS = (_by_field(d) for d in _decoders())


def decode_datum(datum: Any) -> Any:
    """``codec.decode_datum(datum)``: a numpy array or scalar, a str or bytes."""
    fields = datum.values.ListFields()
    if len(fields) != 1:
        # no value at all (a first step's reward): None, as envlogger decodes it
        return None if not fields else codec.decode_datum(datum)
    field, values = fields[0]
    dims = datum.shape.dim
    if len(dims) == 1 and dims[0].size == _SCALAR:
        scalar = _SCALARS.get(field)
        return codec.decode_datum(datum) if scalar is None else scalar(values)
    array = _ARRAYS.get(field)  # None: a field this envlogger does not know
    if array is None:
        return codec.decode_datum(datum)
    return array(values).reshape([dim.size for dim in dims])


def decode(data: Any) -> Any:
    """``codec.decode(data)`` for a ``storage_pb2.Data``: nested lists, tuples and dicts."""
    kind = data.WhichOneof("value")
    if kind == "datum":
        return decode_datum(data.datum)
    if kind == "tuple":
        return tuple([decode(x) for x in data.tuple.values])
    if kind == "dict":
        d = data.dict
        values = d.values  # a map: its keys, then each value (not the slower items())
        out = {k: decode(values[k]) for k in values}
        kvs = d.kvs.values
        if kvs:
            out.update({decode(t.tuple.values[0]): decode(t.tuple.values[1]) for t in kvs})
        return out
    if kind == "array":
        return [decode(x) for x in data.array.values]
    return None


def _step(data: Any) -> step_data.StepData:
    """A decoded step record as envlogger's Riegeli reader returns it (a ``StepData``)."""
    (step_type, reward, discount, observation), action, custom_data = data
    timestep = dm_env.TimeStep(dm_env.StepType(step_type), reward, discount, observation)
    return step_data.StepData(timestep, action, custom_data)


SPECS_KEY = "environment_specs"  # envlogger's entry of the specs in a log's metadata


def _metadata(data: Any, specs: Callable[[bytes], Any] | None) -> Any:
    """A log's decoded metadata; its :data:`SPECS_KEY` entry ``specs(its serialized Data)``
    when ``specs`` is given."""
    if specs is not None and data.WhichOneof("value") == "dict" and not data.dict.kvs.values:
        values = data.dict.values
        if SPECS_KEY in values:
            return {
                k: specs(values[k].SerializeToString(deterministic=True))
                if k == SPECS_KEY
                else decode(values[k])
                for k in values
            }
    return decode(data)


def read_log(
    log_dir: str, *, steps: bool = True, specs: Callable[[bytes], Any] | None = None
) -> tuple[dict[str, Any], list[Any]]:
    """A Riegeli log's metadata (with envlogger's ``environment_specs``) and (``steps``)
    every ``StepData``, as ``envlogger.Reader``'s ``metadata()`` and ``list(reader.steps)``
    give them, in about half the time of opening the Reader: its metadata is decoded here
    like the steps (:func:`decode`), and nothing else is done at opening. A log whose last
    shard was cut (no step index: a writer that was not closed) is read as envlogger does,
    without that shard. ``specs``: the metadata's ``environment_specs`` is ``specs(its
    serialized Data)`` instead (a caller's cache: every log of an environment holds the same
    specs)."""
    dataset = riegeli_dataset_reader.RiegeliDatasetReader()
    try:
        dataset.init(log_dir)
    except RuntimeError as exc:
        if not str(exc).startswith("NOT_FOUND: Empty steps in "):
            raise
    try:
        raw = dataset.metadata()
        parse = storage_pb2.Data.FromString
        meta = _metadata(parse(raw.SerializeToString()), specs) if raw is not None else None
        records = range(dataset.num_steps) if steps else range(0)
        return meta or {}, [_step(decode(parse(dataset.serialized_step(i)))) for i in records]
    finally:
        dataset.close()
