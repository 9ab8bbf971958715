"""Features derived from dm_env specs, and the value checks before encoding."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
import tensorflow_datasets as tfds
from dm_env import specs
from PIL import Image

from server.export.columns import check_range
from server.export.episode import EnvSpecs
from server.export.errors import ExportError, ValueOutOfRangeError
from server.export.fields import specs_signature
from server.export.formats.rlds.example import encode_png, spec_column
from server.export.formats.rlds.features import episode_features, spec_to_feature

f = tfds.features


def _specs(obs: object) -> EnvSpecs:
    return EnvSpecs(
        observation=obs,
        action=specs.DiscreteArray(3, dtype=np.int32),
        reward=specs.Array((), np.float64),
        discount=specs.BoundedArray((), np.float64, 0.0, 1.0),
    )


def test_spec_mapping() -> None:
    box = spec_to_feature(specs.BoundedArray((4,), np.float32, -1.0, 1.0))
    assert isinstance(box, f.Tensor) and box.shape == (4,) and box.np_dtype == np.float32
    discrete = spec_to_feature(specs.DiscreteArray(5, dtype=np.int32))
    assert discrete.shape == () and discrete.np_dtype == np.int64
    image = spec_to_feature(specs.Array((210, 160, 3), np.uint8))
    assert isinstance(image, f.Image) and image.shape == (210, 160, 3)
    small_int = spec_to_feature(specs.Array((2, 3), np.uint8))  # not an image: no channels
    assert type(small_int) is f.Tensor
    nested = spec_to_feature(
        {"image": specs.Array((8, 8, 3), np.uint8), "dir": specs.Array((), np.int64)}
    )
    assert isinstance(nested, f.FeaturesDict) and set(nested.keys()) == {"image", "dir"}
    exact = spec_to_feature(specs.Array((), np.float64))
    assert exact.np_dtype == np.float64 and exact._encoding == f.Encoding.BYTES
    with pytest.raises(ExportError, match="tuple"):
        spec_to_feature((specs.Array((), np.int64),))


def test_episode_features_layout() -> None:
    feats = episode_features(
        _specs(specs.Array((4,), np.float32)), keep_step_metadata=True, step_tag_names=["b", "a"]
    )
    step_keys = set(feats["steps"].feature.keys())
    assert step_keys == {
        "observation", "action", "reward", "discount", "is_first", "is_last", "is_terminal",
        "frame", "input", "timing", "info", "control", "camera", "tag:a", "tag:b", "narration",
    }  # fmt: skip
    assert set(feats.keys()) == {
        "steps", "episode_id", "agent_id", "study_id", "env_id", "env_config", "seed",
        "status", "tags", "notes", "outcome", "player_outcome", "reviewer_outcome",
        "replay_verdict", "replay_step", "replay_message", "task_id", "language_instruction",
        "ended_by", "env_outcome", "judged", "judgement_wins", "judgement_losses",
        "judgement_ties", "judgement_ratings", "judgement_mean_rating",
    }  # fmt: skip
    stripped = episode_features(
        _specs(specs.Array((4,), np.float32)), keep_step_metadata=False, step_tag_names=[]
    )
    assert "frame" not in stripped["steps"].feature.keys()
    assert "narration" in stripped["steps"].feature.keys()  # an annotation, never stripped


def test_signature_ignores_bounds_not_shapes() -> None:
    a = _specs(specs.BoundedArray((4,), np.float32, -1.0, 1.0))
    b = _specs(specs.BoundedArray((4,), np.float32, -2.0, 2.0))
    c = _specs(specs.BoundedArray((5,), np.float32, -1.0, 1.0))
    assert specs_signature(a) == specs_signature(b) != specs_signature(c)


def test_int_range_is_validated() -> None:
    check_range(np.array([0, 255]), np.uint8, "ok")
    with pytest.raises(ValueOutOfRangeError, match=r"^step 1, field obs: value 256 does not fit"):
        check_range(np.array([0, 256]), np.uint8, "obs")
    with pytest.raises(ValueOutOfRangeError, match="step 0, field action: .* does not fit int32"):
        spec_column([np.int64(2**40)], specs.Array((), np.int32), "action")
    with pytest.raises(ValueOutOfRangeError, match="step 0, field x: 0.5 is fractional"):
        check_range(np.array([0.5]), np.int64, "x")
    with pytest.raises(ValueOutOfRangeError, match="step 2, field a/b: nan is not a finite"):
        check_range(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, np.nan]]), np.int32, "a/b")
    with pytest.raises(ValueOutOfRangeError, match="step 1, field r: value 1e.300 does not fit"):
        spec_column([0.5, 1e300], specs.Array((), np.float32), "r")  # would become inf
    check_range(np.array([np.inf, np.nan]), np.float32, "r")  # float32 holds those as they are
    with pytest.raises(ExportError, match="shape"):
        spec_column([np.zeros(3)], specs.Array((4,), np.float32), "obs")


def test_png_is_lossless() -> None:
    rng = np.random.default_rng(0)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}
    for channels in (1, 3, 4):
        for shape in ((7, 9), (1, 5), (5, 1), (210, 160)):
            image = rng.integers(0, 256, (*shape, channels), dtype=np.uint8)
            if shape == (210, 160):  # flat areas and steps, as in game frames
                image[50:120] = 0
                image[120:] = 255
            data = encode_png(image)
            assert _png_chunk_crcs_hold(data)  # Pillow checks only some chunks' CRCs
            decoded = Image.open(io.BytesIO(data))
            assert decoded.mode == mode[channels]
            np.testing.assert_array_equal(np.asarray(decoded).reshape(image.shape), image)
    view = rng.integers(0, 256, (8, 12, 3), dtype=np.uint8)[::2, ::3]  # not contiguous
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(encode_png(view)))), view)


def _png_chunk_crcs_hold(data: bytes) -> bool:
    """Whether every chunk of a PNG has its CRC, up to its IEND chunk, which ends the data."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at = 8
    while True:
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        if crc != zlib.crc32(body, zlib.crc32(kind)):
            return False
        at += 12 + length
        if kind == b"IEND":
            return at == len(data)
