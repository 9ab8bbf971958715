"""The fast step decoder gives what envlogger's own codec gives, value for value and type for
type: on every kind of value envlogger stores, and on every step of real recorded logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from server.recording.envlogger_log import codec, envlogger, storage_pb2
from server.recording.log_reader import decode, read_log
from tests.export.recordings import record_episode


def same(got: Any, want: Any, where: str = "") -> None:
    """Equal values of the same types (numpy dtypes and shapes too), recursively."""
    assert type(got) is type(want), (where, type(got), type(want))
    if isinstance(want, dict):  # in protobuf's map order, which no export depends on
        assert sorted(map(repr, got)) == sorted(map(repr, want)), where
        for key in want:
            same(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, list | tuple):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            same(g, w, f"{where}[{i}]")
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape, where
        assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), where
    elif isinstance(want, float) and np.isnan(want):
        assert np.isnan(got), where
    else:
        assert got == want, where


VALUES: list[Any] = [
    None,
    1.5,
    7,
    -(2**40),
    0,
    -1,
    2**70,  # Python ints are envlogger's big ints (a step type is one)
    -(2**70),
    True,
    "text",
    b"\x00bytes",
    np.float32(2.5),
    np.float64(np.nan),
    np.int8(-3),
    np.int16(300),
    np.int32(-7),
    np.int64(2**62),
    np.uint8(200),
    np.uint16(60000),
    np.uint32(2**31),
    np.uint64(2**63),
    np.bool_(True),
    *[
        np.arange(12, dtype=t).reshape(3, 4)
        for t in (
            np.float32,
            np.float64,
            np.int8,
            np.int16,
            np.int32,
            np.int64,
            np.uint8,
            np.uint16,
            np.uint32,
            np.uint64,
        )
    ],  # fmt: skip
    np.array([True, False]),
    np.zeros((0, 3), dtype=np.float32),
    np.array(["a", "bc"]),
    np.array([b"a", b"bc"]),
    [np.ones(2, dtype=np.float32), np.zeros(3, dtype=np.float32)],
    (np.int64(1), (2.0, None)),
    {"a": np.ones((2, 2), dtype=np.uint8), "b": {"c": "d", "e": [1, 2]}},
    {1: "int key", ("t", 2): np.float32(1)},
]


def test_decode_equals_envlogger_codec() -> None:
    for value in VALUES:
        data = storage_pb2.Data.FromString(codec.encode(value).SerializeToString())
        same(decode(data), codec.decode(data), repr(value))


def test_read_log_equals_envlogger_reader(tmp_path: Path) -> None:
    def make() -> gym.Env:
        return gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=12)

    rec = record_episode(make, tmp_path / "ep", env_id="CartPole-v1", episode_id="e", seed=3)
    with envlogger.Reader(str(rec.log_dir)) as reader:
        want = list(reader.steps)
        want_meta = reader.metadata()
    meta, got = read_log(str(rec.log_dir))
    same(meta, want_meta, "metadata")
    assert meta["episode_id"] == "e" and "environment_specs" in meta
    header, none = read_log(str(rec.log_dir), steps=False)
    same(header, want_meta, "metadata alone")
    assert none == []
    assert len(got) == len(want) == rec.num_steps
    for t, (g, w) in enumerate(zip(got, want, strict=True)):
        assert type(g) is type(w) and type(g.timestep) is type(w.timestep)
        same(g.timestep.step_type, w.timestep.step_type, f"step {t}")
        for name in ("observation", "reward", "discount"):
            same(getattr(g.timestep, name), getattr(w.timestep, name), f"step {t} {name}")
        same(g.action, w.action, f"step {t} action")
        same(g.custom_data, w.custom_data, f"step {t} custom_data")


def test_read_log_hands_its_specs_to_a_cache(tmp_path: Path) -> None:
    """With ``specs``, a log's metadata holds what ``specs`` made of its serialized
    environment specs (the rest as decoded); the episode reader's cache of them gives the
    specs decoded from the metadata, one object for every log of the environment."""
    from server.export.episode import read_episode, read_header, read_specs

    def make() -> gym.Env:
        return gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=5)

    logs = [
        record_episode(make, tmp_path / f"ep{i}", env_id="CartPole-v1", episode_id=f"e{i}", seed=i)
        for i in range(2)
    ]
    want, _steps = read_log(str(logs[0].log_dir), steps=False)
    seen: list[bytes] = []
    meta, _steps = read_log(
        str(logs[0].log_dir), steps=False, specs=lambda b: seen.append(b) or "cached"
    )
    assert meta.pop("environment_specs") == "cached"
    same(meta, {k: v for k, v in want.items() if k != "environment_specs"}, "metadata")
    same(decode(storage_pb2.Data.FromString(seen[0])), want["environment_specs"], "specs")
    decoded = read_specs(want)
    specs = [read_header(rec.log_dir)[0] for rec in logs] + [read_episode(logs[1].log_dir).specs]
    assert all(s is specs[0] for s in specs)
    assert repr(specs[0]) == repr(decoded)
