"""Gymnasium spaces → dm_env specs, and values converted to match those specs."""

from __future__ import annotations

from typing import Any

import numpy as np
from dm_env import specs
from gymnasium import spaces


class UnsupportedSpace(TypeError):
    """A Gymnasium space with no dm_env spec equivalent here."""


def space_to_spec(space: spaces.Space, name: str = "") -> Any:
    """The dm_env spec (or nest of specs) that holds values of ``space``."""
    if isinstance(space, spaces.Discrete):
        if int(space.start) == 0:
            return specs.DiscreteArray(int(space.n), dtype=np.int64, name=name)
        return specs.BoundedArray(
            (), np.int64, int(space.start), int(space.start + space.n - 1), name=name
        )
    if isinstance(space, spaces.Box):
        return specs.BoundedArray(space.shape, space.dtype, space.low, space.high, name=name)
    if isinstance(space, spaces.MultiDiscrete):
        start = np.asarray(space.start, dtype=np.int64)
        return specs.BoundedArray(
            space.shape, np.int64, start, start + np.asarray(space.nvec) - 1, name=name
        )
    if isinstance(space, spaces.MultiBinary):
        return specs.BoundedArray(space.shape, np.int8, 0, 1, name=name)
    if isinstance(space, spaces.Text):
        return specs.StringArray((), name=name)
    if isinstance(space, spaces.Dict):
        return {k: space_to_spec(s, name=k) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(space_to_spec(s, name=f"{name}{i}") for i, s in enumerate(space.spaces))
    if isinstance(space.sample(), str):  # text-like spaces, e.g. MiniGrid's MissionSpace
        return specs.StringArray((), name=name)
    raise UnsupportedSpace(f"unsupported Gymnasium space {space!r}")


def to_spec_value(value: Any, spec: Any) -> Any:
    """``value`` as a fresh array of ``spec``'s dtype (nests follow the spec)."""
    if isinstance(spec, dict):
        return {k: to_spec_value(value[k], s) for k, s in spec.items()}
    if isinstance(spec, tuple):
        return tuple(to_spec_value(v, s) for v, s in zip(value, spec, strict=True))
    if isinstance(spec, specs.StringArray):
        return str(value)
    # Always copy: environments may reuse their observation buffers between steps.
    return np.array(value, dtype=spec.dtype, copy=True)


def from_spec_value(value: Any, space: spaces.Space) -> Any:
    """An action recorded as a spec value, back to what ``space`` expects."""
    if isinstance(space, spaces.Discrete):
        return int(np.asarray(value).reshape(()))
    if isinstance(space, spaces.Dict):
        return {k: from_spec_value(value[k], s) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(from_spec_value(v, s) for v, s in zip(value, space.spaces, strict=True))
    if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        return np.asarray(value, dtype=space.dtype).reshape(space.shape)
    return value


def describe(spec: Any) -> Any:
    """A JSON-able description of a spec nest (for ``EnvWorker.info``)."""
    if isinstance(spec, dict):
        return {k: describe(s) for k, s in spec.items()}
    if isinstance(spec, tuple | list):
        return [describe(s) for s in spec]
    out: dict[str, Any] = {"shape": list(spec.shape), "dtype": str(np.dtype(spec.dtype))}
    if isinstance(spec, specs.DiscreteArray):
        out["num_values"] = int(spec.num_values)
    elif isinstance(spec, specs.BoundedArray):
        lo, hi = np.asarray(spec.minimum), np.asarray(spec.maximum)
        if lo.size <= 64:
            out["minimum"] = _finite(lo)
            out["maximum"] = _finite(hi)
    return out


def _finite(a: np.ndarray) -> Any:
    """Bounds as JSON (infinities as None)."""
    flat = [None if not np.isfinite(x) else x.item() for x in a.reshape(-1)]
    return flat[0] if a.ndim == 0 else flat
