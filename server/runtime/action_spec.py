"""A (nested) dm_env action spec as one flat vector: its leaves, their bounds, and back."""

from __future__ import annotations

from typing import Any

import numpy as np
from dm_env import specs


def flat_leaves(spec: Any) -> list[Any]:
    """The array specs of a (nested) action spec, in order."""
    if isinstance(spec, dict):
        return [leaf for k in spec for leaf in flat_leaves(spec[k])]
    if isinstance(spec, tuple | list):
        return [leaf for s in spec for leaf in flat_leaves(s)]
    return [spec]


def leaf_bounds(spec: Any) -> tuple[np.ndarray, np.ndarray]:
    """A leaf's flat low and high bounds (-inf, inf where it has none)."""
    shape = spec.shape
    if isinstance(spec, specs.BoundedArray):
        lo = np.broadcast_to(np.asarray(spec.minimum, dtype=np.float64), shape)
        hi = np.broadcast_to(np.asarray(spec.maximum, dtype=np.float64), shape)
        return lo.reshape(-1), hi.reshape(-1)
    size = int(np.prod(shape))
    return np.full(size, -np.inf), np.full(size, np.inf)


def unflatten(spec: Any, vec: np.ndarray) -> Any:
    """The flat vector ``vec`` as an action of ``spec`` (leaves in spec order, their dtypes;
    integer leaves rounded to the nearest)."""
    pos = 0

    def build(node: Any) -> Any:
        nonlocal pos
        if isinstance(node, dict):
            return {k: build(s) for k, s in node.items()}
        if isinstance(node, tuple | list):
            return type(node)(build(s) for s in node)
        n = int(np.prod(node.shape))
        part, dtype = vec[pos : pos + n], np.dtype(node.dtype)
        pos += n
        part = np.round(part) if dtype.kind in "iub" else part  # integers: the nearest
        return part.astype(dtype).reshape(node.shape)

    return build(spec)
