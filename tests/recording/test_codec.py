"""Our in-place step encoder builds the same messages as envlogger's codec."""

from __future__ import annotations

import enum

import dm_env
import numpy as np
import pytest

from server.recording import codec as fast
from server.recording.envlogger_log import codec as reference
from server.recording.envlogger_log import (
    envlogger,
    riegeli_dataset_reader,
    riegeli_dataset_writer,
    storage_pb2,
)


class Color(enum.IntEnum):
    RED = 3


class Name(enum.StrEnum):
    A = "a"


SCALARS = [
    0.5, -1e300, float("inf"), np.float64(2.25), np.float32(-0.75), np.float16(1.5),
    np.int64(-7), np.int32(9), np.uint64(2**63), np.uint32(5), np.int16(-300), np.int8(-3),
    np.uint16(65535), np.uint8(200), 7, -2**70, True, np.bool_(False),
    b"\xff\xd8jpeg", b"", "text", "", "ünïcode", dm_env.StepType.MID, Color.RED, Name.A,
]  # fmt: skip

ARRAYS = [
    np.arange(12, dtype=np.uint8).reshape(2, 3, 2),
    np.zeros((210, 160, 3), dtype=np.uint8),
    np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2),
    np.arange(4, dtype=np.float64),
    np.arange(5, dtype=np.int64) - 2,
    np.arange(3, dtype=np.int32),
    np.arange(3, dtype=np.int16),
    np.arange(3, dtype=np.int8),
    np.arange(3, dtype=np.uint16),
    np.arange(3, dtype=np.uint32),
    np.arange(3, dtype=np.uint64),
    np.array([True, False]),
    np.array(["a", "bc"], dtype=object),
    np.array([b"x", b"yz"], dtype=object),
    np.zeros((0,), dtype=np.float32),
    np.zeros((2, 0), dtype=np.int64),
    np.float32(3.0) * np.ones(()),
    np.array(7, dtype=np.uint8),
    np.arange(6, dtype=np.uint8).reshape(2, 3)[:, ::2],  # not contiguous
]

NESTED = [
    None, (), [], {}, (1.0, None, "x"), [np.int64(1), np.int64(2)],
    {"a": np.ones(2, np.float32), "b": {"c": (b"z", 0.5)}, "d": None},
    {1: "int key", 2: "another"}, {"s": 1, 3: "mixed keys"},
    {"nested": [{"x": 1.0}, {"x": 2.0}]},
]  # fmt: skip


def _step(observation):
    timestep = dm_env.TimeStep(dm_env.StepType.MID, 1.5, np.float32(0.99), observation)
    metadata = {"frame": b"\xff\xd8", "input": '{"keys":["KeyA"]}', "timing": "{}", "info": "{}"}
    return envlogger.StepData(timestep, np.int64(2), metadata)


STEPS = [
    _step(np.zeros((4, 4, 3), np.uint8)),
    _step({"image": np.zeros((2, 2, 3), np.uint8), "direction": np.int64(1), "mission": "go"}),
    _step((np.ones(3, np.float32), np.arange(2))),
    envlogger.StepData(dm_env.restart(np.ones(2)), None, {"frame": b"", "input": "null"}),
]


@pytest.mark.parametrize("value", SCALARS + ARRAYS + NESTED + STEPS, ids=repr)
def test_encode_equals_envloggers_codec(value):
    try:
        theirs = reference.encode(value)
    except TypeError:  # float16, object arrays: envlogger refuses them, so must we
        with pytest.raises(TypeError):
            fast.encode(value)
        return
    ours = fast.encode(value)
    assert ours == theirs
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )


# What envlogger can write and read back (it refuses float16 and object arrays, and an empty
# array reads back as None).
SUPPORTED = [v for v in SCALARS + ARRAYS if not isinstance(v, np.float16 | np.ndarray)
             or (isinstance(v, np.ndarray) and v.dtype != object and v.size)]  # fmt: skip


@pytest.mark.parametrize("value", SUPPORTED, ids=repr)
def test_encoded_values_decode_to_what_was_given(value):
    decoded = reference.decode(fast.encode(value))
    if isinstance(value, np.ndarray):
        assert decoded.dtype == value.dtype
        np.testing.assert_array_equal(decoded, value)
    else:
        assert decoded == value


def test_a_step_decodes_to_its_parts():
    step = STEPS[0]
    timestep, action, metadata = reference.decode(fast.encode(step))
    np.testing.assert_array_equal(timestep[3], step.timestep.observation)
    assert (timestep[1], timestep[2], int(action)) == (1.5, np.float32(0.99), 2)
    assert metadata == step.custom_data


def test_unsupported_values_fail_like_envlogger():
    with pytest.raises(TypeError):
        reference.encode({1, 2})
    with pytest.raises(TypeError):
        fast.encode({1, 2})


@pytest.mark.parametrize("value", SCALARS + ARRAYS + NESTED + STEPS, ids=repr)
def test_serialized_equals_envloggers_message(value):
    try:
        theirs = reference.encode(value)
    except TypeError:  # refused by envlogger: refused here too
        with pytest.raises(TypeError):
            fast.serialize(value)
        return
    ours = storage_pb2.Data.FromString(fast.serialize(value))
    assert ours == theirs
    if "dict" not in str(theirs):  # (a map's entries may be serialized in any order)
        assert fast.serialize(value) == theirs.SerializeToString()


def test_the_log_writer_takes_serialized_steps(tmp_path):
    # envlogger's writer binding reads a message through SerializeToString(): the bytes of
    # a Serialized go in as they are and read back as the step envlogger's codec encodes.
    writer = riegeli_dataset_writer.RiegeliDatasetWriter()
    writer.init(str(tmp_path), storage_pb2.Data(), 1, "zstd:1")
    for step in STEPS[:2]:
        assert writer.add_step(fast.Serialized(fast.serialize(step)), True)
    writer.close()
    reader = riegeli_dataset_reader.RiegeliDatasetReader()
    reader.init(str(tmp_path))
    assert reader.num_steps == 2
    for index, step in enumerate(STEPS[:2]):
        read = storage_pb2.Data.FromString(reader.step(index).SerializeToString())
        assert read == reference.encode(step)
