"""Replays that prove themselves: an episode re-simulated from its log and compared with it.

Runs in the interpreter of the environment's runtime (the verification process,
:mod:`server.runtime._replay_main`, and a worker's determinism trial for Validate), so it
imports only what every runtime holds (``requirements/runtimes/worker.in``).

A replay builds the environment from the spec the log was recorded with, seeds it with the
recorded seed, resets, then applies each recorded action (the action the environment got,
whoever chose it: player or policy), doing at every timestep what the worker's render did to
the simulation (``replay_frame``: Fetch's render runs ``mj_forward``; ours and dm_control's
only read it, so nothing is drawn), and compares each timestep with the log: the
observation, the reward, the discount and the end flags. The observation's images are
compared at a sample of steps (``images_at``) where the environment can leave them out of
the others (Robosuite's, whose recorded ``sim_state`` is compared at every step).
Integers, booleans, text and images (any integer array) must be equal; floats equal within
:data:`RTOL` and :data:`ATOL` (``numpy.isclose``; NaN equals NaN). The first difference is
the verdict ``diverged``: its step, its field, the two values and by how much. Nothing is
written: the log is only read.
"""

from __future__ import annotations

import importlib.metadata
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dm_env
import numpy as np

VERIFIED, DIVERGED, NOT_REPLAYABLE = "verified", "diverged", "not_replayable"
RTOL = 1e-6  # floats: |replayed - recorded| <= ATOL + RTOL * |recorded|
ATOL = 1e-6
TRIAL_STEPS = 30  # steps of Validate's determinism trial, at most
TRIAL_S = 8.0  # ... and no more steps once its first run has taken this long (at least 3)
# A check compares the observation's images at every IMAGES_EVERY-th step (and the first and
# last) where the environment can leave them out of the others (``verify_images: sample``,
# the default; docs/review.md, "Replay verification"); every other value at every step.
IMAGES_EVERY = 20
_SHOWN = 80  # characters of a value shown in a verdict


class ReplayStopped(Exception):
    """The replay ran past its deadline (the caller stops it)."""


@dataclass(frozen=True)
class Difference:
    """Where a replay first differs from the log."""

    step: int
    field: str  # "observation/state", "reward", "discount", "is_last", "is_terminal"
    recorded: str
    replayed: str
    amount: float | None  # the largest absolute difference (numbers), or None
    count: int | None = None  # how many elements differ (arrays)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "field": self.field,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "amount": self.amount,
            "count": self.count,
        }
        out["message"] = describe(out)
        return out


def describe(diff: Mapping[str, Any]) -> str:
    """A sentence about a difference (its :meth:`Difference.public` form)."""
    text = f"step {diff['step']}, {diff['field']}: recorded {diff['recorded']}, replayed "
    text += str(diff["replayed"])
    if diff.get("count"):
        text += f" ({diff['count']} values differ"
        text += f", by up to {diff['amount']:.3g})" if diff.get("amount") is not None else ")"
    elif diff.get("amount") is not None:
        text += f" (by {diff['amount']:.3g})"
    return text


def _shown(value: Any) -> str:
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"array{list(value.shape)} of {value.dtype}"
    text = repr(value.tolist() if isinstance(value, np.ndarray | np.generic) else value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def compare_values(path: str, recorded: Any, replayed: Any, step: int) -> Difference | None:
    """The first difference between two nested values (dicts, sequences, arrays, scalars)."""
    if isinstance(recorded, Mapping) or isinstance(replayed, Mapping):
        if not (isinstance(recorded, Mapping) and isinstance(replayed, Mapping)):
            return Difference(step, path, _shown(recorded), _shown(replayed), None)
        if set(recorded) != set(replayed):
            keys = sorted(map(str, set(recorded) ^ set(replayed)))
            return Difference(
                step,
                path,
                f"keys {sorted(map(str, recorded))}",
                f"keys {sorted(map(str, replayed))} ({', '.join(keys)})",
                None,
            )
        for key in recorded:
            found = compare_values(f"{path}/{key}", recorded[key], replayed[key], step)
            if found:
                return found
        return None
    if isinstance(recorded, list | tuple) and isinstance(replayed, list | tuple):
        if len(recorded) != len(replayed):
            return Difference(step, path, f"{len(recorded)} items", f"{len(replayed)} items", None)
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            found = compare_values(f"{path}/{i}", a, b, step)
            if found:
                return found
        return None
    if recorded is None or replayed is None:
        same = recorded is None and replayed is None
        return None if same else Difference(step, path, _shown(recorded), _shown(replayed), None)
    if isinstance(recorded, str | bytes) or isinstance(replayed, str | bytes):
        same = type(recorded) is type(replayed) and recorded == replayed
        return None if same else Difference(step, path, _shown(recorded), _shown(replayed), None)
    return _compare_arrays(path, np.asarray(recorded), np.asarray(replayed), step)


def _compare_arrays(path: str, a: np.ndarray, b: np.ndarray, step: int) -> Difference | None:
    if a.shape != b.shape:
        return Difference(step, path, f"shape {list(a.shape)}", f"shape {list(b.shape)}", None)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        x, y = a.astype(np.float64), b.astype(np.float64)
        close = np.isclose(y, x, rtol=RTOL, atol=ATOL, equal_nan=True)
        if bool(close.all()):
            return None
        gap = np.abs(x - y)
        amount = float(np.nanmax(np.where(close, 0.0, gap))) if gap.size else None
        if amount is not None and not math.isfinite(amount):
            amount = None
        return _difference(path, x, y, ~close, step, amount)
    if a.dtype.kind in "OSU" or b.dtype.kind in "OSU":
        unequal = np.asarray(a != b, dtype=bool).reshape(a.shape)
        return None if not unequal.any() else _difference(path, a, b, unequal, step, None)
    unequal = a != b
    if not unequal.any():
        return None
    if a.dtype.kind == "b":
        return _difference(path, a, b, unequal, step, None)
    amount = float(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))
    return _difference(path, a, b, unequal, step, amount)


def _difference(
    path: str, a: np.ndarray, b: np.ndarray, where: np.ndarray, step: int, amount: float | None
) -> Difference:
    if a.ndim == 0:
        return Difference(step, path, _shown(a[()]), _shown(b[()]), amount)
    first = tuple(int(i) for i in np.argwhere(where)[0])
    at = "[" + ", ".join(map(str, first)) + "]"
    return Difference(step, path + at, _shown(a[first]), _shown(b[first]), amount, int(where.sum()))


def compare_timestep(
    step: int,
    recorded: dm_env.TimeStep,
    replayed: dm_env.TimeStep,
    *,
    final: bool,
    time_limited: bool = False,
) -> Difference | None:
    """The first difference between a logged timestep and its replay.

    ``final``: the log's last timestep (an episode canceled or abandoned stops on a
    transition, which the replay may continue past). ``time_limited``: the episode was cut
    by the study's ``max_duration_s`` (a wall-clock limit a replay does not meet), so its
    final truncation is not the environment's."""
    found = compare_values("observation", recorded.observation, replayed.observation, step)
    if found:
        return found
    if step > 0:
        for name in ("reward", "discount"):
            found = compare_values(name, getattr(recorded, name), getattr(replayed, name), step)
            if found:
                return found
    if recorded.last() != replayed.last():
        if final and not replayed.last() and (time_limited or not recorded.last()):
            return None
        ends = {True: "the episode ended", False: "the episode went on"}
        return Difference(step, "is_last", ends[recorded.last()], ends[replayed.last()], None)
    terminal = (
        recorded.last() and recorded.discount == 0,
        replayed.last() and replayed.discount == 0,
    )
    if terminal[0] != terminal[1]:
        kinds = {True: "terminated", False: "truncated"}
        return Difference(
            step, "is_terminal", kinds[bool(terminal[0])], kinds[bool(terminal[1])], None
        )
    return None


def declared_nondeterministic(adapter: Any) -> bool:
    """Whether the environment says it does not replay (Gymnasium's ``nondeterministic``)."""
    env = getattr(adapter, "env", None)
    spec = getattr(env, "spec", None)
    return bool(getattr(spec, "nondeterministic", False))


def package_versions(adapter: Any) -> str:
    """``name==version`` of the distribution that defines the environment (and MuJoCo's, when
    the environment uses it): a change re-verifies its episodes."""
    env = getattr(adapter, "env", adapter)
    inner = getattr(env, "unwrapped", env)
    top = type(inner).__module__.split(".")[0]
    names = list(importlib.metadata.packages_distributions().get(top, []))
    if "mujoco" in sys.modules:
        names.append("mujoco")
    found = []
    for name in dict.fromkeys(names):
        try:
            found.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return " ".join(found) or f"{top} (no installed distribution)"


@dataclass
class Replay:
    """Drives a fresh environment through recorded actions, comparing as it goes."""

    adapter: Any
    deadline: float | None = None  # time.monotonic() past which the replay stops

    def _check_time(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ReplayStopped

    def run(
        self,
        seed: int | None,
        recorded: Sequence[dm_env.TimeStep],
        actions: Sequence[Any],
        *,
        cameras: Sequence[str | None] = (),
        time_limited: bool = False,
        on_step: Callable[[int], None] | None = None,
        images_at: Callable[[int], bool] | None = None,
    ) -> Difference | None:
        """Replay ``actions`` (``actions[t]`` led to ``recorded[t]``; ``actions[0]`` is
        unused) from a reset with ``seed``: the first difference, or None.

        ``images_at(t)``: whether step ``t``'s observation images are drawn and compared
        (the first and last steps' always are); at the other steps an environment that can
        (``defer_images``) leaves them out, and every other value is compared. None: every
        step's. The frame is never drawn, only what drawing it does to the simulation
        (``replay_frame``)."""
        adapter = self.adapter
        last = len(recorded) - 1
        deferrable = adapter.defer_images(True) if images_at is not None else ()
        adapter.set_seed(seed)
        for t in range(len(recorded)):
            drawn = not deferrable or t in (0, last) or bool(images_at and images_at(t))
            if deferrable:
                adapter.defer_images(not drawn)
            if t:
                self._check_time()
                replayed = adapter.step(actions[t])
            else:
                replayed = adapter.reset()
            camera = cameras[t] if t < len(cameras) else None
            if camera and camera != adapter.camera and camera in adapter.cameras:
                adapter.set_camera(camera)
            adapter.replay_frame()
            logged = recorded[t]
            if not drawn:
                logged, replayed = _without(logged, deferrable), _without(replayed, deferrable)
            found = compare_timestep(
                t, logged, replayed, final=t == last, time_limited=time_limited
            )
            if found:
                return found
            if on_step is not None:
                on_step(t)
        if deferrable:
            adapter.defer_images(False)
        return None


def _without(timestep: dm_env.TimeStep, keys: Sequence[str]) -> dm_env.TimeStep:
    """The timestep without the observation's ``keys`` (a dict observation's)."""
    obs = timestep.observation
    if not isinstance(obs, Mapping):
        return timestep
    return timestep._replace(observation={k: v for k, v in obs.items() if k not in keys})


def sampled(every: int) -> Callable[[int], bool]:
    """``images_at`` of :meth:`Replay.run` drawing every ``every``-th step's images."""
    return lambda t: t % every == 0


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_copy(v) for v in value)
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


def snapshot(timestep: dm_env.TimeStep) -> dm_env.TimeStep:
    """A timestep whose observation no later step can change (an environment may reuse its
    buffers: the log holds copies)."""
    return timestep._replace(observation=_copy(timestep.observation))


def trial_actions(action_spec: Any, steps: int, seed: int = 0) -> list[Any]:
    """``steps`` valid actions drawn from a fixed generator (the trial's actions)."""
    rng = np.random.default_rng(seed)

    def one(spec: Any) -> Any:
        if isinstance(spec, Mapping):
            return {k: one(v) for k, v in spec.items()}
        dtype = np.dtype(spec.dtype)
        low = np.broadcast_to(getattr(spec, "minimum", -1.0), spec.shape)
        high = np.broadcast_to(getattr(spec, "maximum", 1.0), spec.shape)
        if dtype.kind in "iub":
            value = rng.integers(np.asarray(low, np.int64), np.asarray(high, np.int64) + 1)
            return np.asarray(value, dtype=dtype).reshape(spec.shape)
        low = np.where(np.isfinite(low), low, -1.0)
        high = np.where(np.isfinite(high), high, 1.0)
        return rng.uniform(low, high).astype(dtype).reshape(spec.shape)

    return [None] + [one(action_spec) for _ in range(steps)]


def trial(
    played: Any, fresh: Callable[[], Any], seed: int, steps: int = TRIAL_STEPS
) -> dict[str, Any]:
    """Validate's determinism check: ``played`` (the worker's env) runs up to ``steps`` trial
    actions (for at most about :data:`TRIAL_S`) from a reset with ``seed``, then a ``fresh``
    environment replays them: whether the two agree (``replays``), and the first difference
    when they do not."""
    if declared_nondeterministic(played):
        return {"replays": False, "declared": True, "steps": 0, "difference": None}
    actions = trial_actions(played.action_spec(), steps)
    played.set_seed(seed)
    started = time.monotonic()
    recorded = [snapshot(played.reset())]
    played.frame()
    for action in actions[1:]:
        timestep = snapshot(played.step(action))
        played.frame()
        recorded.append(timestep)
        if timestep.last() or (len(recorded) > 3 and time.monotonic() - started > TRIAL_S):
            break
    replica = fresh()
    try:
        replica.max_steps = played.max_steps
        found = Replay(replica).run(seed, recorded, actions[: len(recorded)])
    finally:
        replica.close()
    return {
        "replays": found is None,
        "declared": False,
        "steps": len(recorded) - 1,
        "difference": None if found is None else found.public(),
    }
