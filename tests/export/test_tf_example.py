"""The directly written tf.train.Example bytes are TFDS's, byte for byte."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer
from tensorflow_datasets.proto import tf_feature_pb2

from server.export import ExportOptions, TaggedSpan
from server.export.base import prepare
from server.export.formats.rlds.encoding import encode_episode, rlds_features
from server.export.formats.rlds.example import EpisodeSerializer, encode_episode_example
from server.export.formats.rlds.tf_example import ExampleWriter, varint, varints
from server.export.run import check_compatible
from tests.export.conftest import episode_input
from tests.export.recordings import Recording

f = tfds.features


def tfds_bytes(features: Any, encoded: dict[str, Any]) -> bytes:
    """What TFDS's serializer writes (deterministically) for an encoded example."""
    serializer = example_serializer.ExampleSerializer(features.get_serialized_info())
    return bytes(serializer.get_tf_example(encoded).SerializeToString(deterministic=True))


@pytest.mark.parametrize("env", ["cartpole", "pong", "minigrid", "lunar"])
@pytest.mark.parametrize(("profile", "keep"), [("", True), ("", False), ("oxe", True)])
def test_episodes_as_tfds_writes_them(
    recordings: dict[str, list[Recording]],
    env: str,
    profile: str,
    keep: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each episode's record is what TFDS's own encode_example and serializer make of it."""
    inputs = [
        episode_input(r, step_tags=(TaggedSpan("good", 0, 2),), tags=("a", "é"), notes="ü")
        for r in recordings[env]
    ]
    options = ExportOptions(profile=profile, keep_step_metadata=keep)
    features = rlds_features(check_compatible(inputs), options, ["good", "none"])
    serializer = EpisodeSerializer(features)
    writer = serializer._writer  # noqa: SLF001 - checks that it wrote each record
    seen: list[tuple[Any, bytes | None]] = []

    def serialize(example: Any, ours: Any = serializer.serialize) -> bytes:
        seen.append((example, writer.serialize(encode_episode_example(features, example))))
        return bytes(ours(example))

    monkeypatch.setattr(serializer, "serialize", serialize)
    for ep in inputs:
        record = encode_episode(ep, prepare(ep, options), options, ["good", "none"], serializer)
        example, direct = seen[-1]
        assert direct is not None  # an RLDS episode is written directly...
        assert record.record == tfds_bytes(features, features.encode_example(example))  # as TFDS


def test_values_at_the_edges() -> None:
    features = f.FeaturesDict(
        {
            "steps": f.Dataset(
                {
                    "i8": f.Tensor(shape=(2,), dtype=np.int8),
                    "i64": f.Tensor(shape=(), dtype=np.int64),
                    "u64": f.Tensor(shape=(), dtype=np.uint64),
                    "u8": f.Tensor(shape=(3,), dtype=np.uint8),
                    "f32": f.Tensor(shape=(2,), dtype=np.float32),
                    "f64": f.Tensor(shape=(), dtype=np.float64),
                    "flag": f.Tensor(shape=(), dtype=np.bool_),
                    "text": f.Text(),
                    "blob": f.Tensor(shape=(), dtype=np.object_),
                    "ms": f.Tensor(shape=(), dtype=np.int64),  # a column given as one array
                    "speed": f.Tensor(shape=(), dtype=np.float64, encoding=f.Encoding.BYTES),
                    "pos": f.Tensor(shape=(3,), dtype=np.float64, encoding=f.Encoding.BYTES),
                    "small": f.Tensor(shape=(), dtype=np.int8),  # given as int16: converted
                    "steps64": f.Scalar(dtype=np.int64),  # numpy scalars, one per step
                    "reward": f.Tensor(shape=(), dtype=np.float64, encoding=f.Encoding.BYTES),
                }
            ),
            "tags": f.Sequence(f.Text()),
            "empty": f.Sequence(f.Text()),
            "seed": f.Tensor(shape=(), dtype=np.int64),
        }
    )
    big = [0, 1, 127, 128, 300, -1, -(2**63), 2**63 - 1, 2**40, -300]
    n = 40  # more steps than varints encodes one by one
    example = {
        "steps": {
            "i8": [np.array([-128, 127], np.int8)] * n,
            "i64": [big[t % len(big)] for t in range(n)],
            "u64": [np.uint64(2**64 - 1 - t) for t in range(n)],
            "u8": [np.array([0, 200, 255], np.uint8)] * n,
            "f32": [np.array([np.nan, -0.0], np.float32), np.array([np.inf, 1e-45], np.float32)]
            * (n // 2),
            "f64": [0.1 * t for t in range(n)],
            "flag": [t % 3 == 0 for t in range(n)],
            "text": [("", "é", "a" * 200, "b")[t % 4] for t in range(n)],
            "blob": [b"\x00\xff" * t for t in range(n)],
            "ms": np.arange(n, dtype=np.int64) * 10**12 - 1,
            "speed": np.linspace(-1.0, 1.0, n),
            "pos": [np.array([t, np.nan, -t], np.float64) for t in range(n)],
            "small": np.arange(n, dtype=np.int16) - 20,
            "steps64": list(np.arange(n, dtype=np.int64) * -(2**40)),
            "reward": list(np.linspace(0.0, 3.0, n)),
        },
        "tags": ["x", "日本"],
        "empty": [],
        "seed": -5,
    }
    encoded = encode_episode_example(features, example)
    written = ExampleWriter(features.get_serialized_info()).serialize(encoded)
    assert written is not None
    assert written == tfds_bytes(features, features.encode_example(example))


def test_varints_are_protobufs() -> None:
    for values in ([], [5], [-1] * 40, list(range(-70, 300)), [2**63 - 1, -(2**63)] * 20):
        array = np.array(values, dtype=np.int64)
        want = tf_feature_pb2.Int64List(value=array).SerializeToString()
        got = varints(array)  # the packed field's content
        assert (b"\n" + varint(len(got)) + got if got else b"") == want


def test_what_is_not_written_here_goes_to_tfds() -> None:
    ragged = f.FeaturesDict({"steps": f.Dataset({"v": f.Sequence(f.Scalar(np.int64))})})
    assert not ExampleWriter(ragged.get_serialized_info()).supported
    flat = f.FeaturesDict({"x": f.Tensor(shape=(2,), dtype=np.int64), "s": f.Text()})
    writer = ExampleWriter(flat.get_serialized_info())
    assert writer.serialize({"x": np.array([1, 2, 3]), "s": "a"}) is None  # wrong shape
    assert writer.serialize({"x": np.array([1, 2]), "s": np.array(3)}) is None  # not text
    assert writer.serialize({"x": np.array([1, 2])}) is None  # a feature missing
    # ... and TFDS's serializer says what is wrong
    serializer = EpisodeSerializer(flat)
    with pytest.raises(ValueError, match="incompatible"):
        serializer.serialize({"x": np.array([1, 2, 3]), "s": "a"})
