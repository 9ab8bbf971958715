"""Shared autonomy: a policy proposes each action, the player takes over at will.

:class:`SharedAutonomy` decides who drives each step (runs in the worker, beside the
:class:`~server.runtime.input_mapping.ActionMapper`):

- the policy drives while the player holds no control;
- the player drives from the step on which they press any key or button, or move a bound
  axis past its dead zone (``ActionMapper.human_active``), and for ``release_delay_s`` after
  they let go; then the policy drives again;
- a policy that raises, returns something that is no action, or takes longer than the
  operator's budget on a step hands control to the player for the rest of the episode:
  :attr:`SharedAutonomy.error` says why (the episode row's ``policy_error``).

The policy still proposes an action while the player drives (the proposal is recorded), so
each step holds the executed action, the player's mapped action and the policy's proposal.
Policies are built only from what the operator allows (:mod:`server.runtime.allowlist`): an
installed package's entry point or ``STUDIO_POLICIES``; a designer names only the id.

A policy factory is ``module:function(action_spec, observation_spec) -> policy``; a policy
has ``act(observation) -> action`` (the action spec's shape, or its flattened vector) and may
have ``reset()``, called at each episode's start.

Validate times the policy before a study starts (:meth:`SharedAutonomy.trial`): the same
thread and wait as a live step, on the observations its own proposals lead to.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from server.runtime.action_spec import unflatten
from server.runtime.allowlist import AllowedEnvironments, NotAllowed
from server.runtime.input_mapping import ActionMapper
from server.runtime.registration import import_module
from server.study_spec import PolicySpec

HUMAN = 0  # recorded control source codes (int8 in exports)
POLICY = 1
SOURCE_NAMES = ("human", "policy")
# The frame header's control byte: no shared autonomy, the player drives, the policy drives.
FRAME_NONE, FRAME_HUMAN, FRAME_POLICY = 0, 1, 2
# What a step event says without shared autonomy (see :meth:`SharedAutonomy.event`).
NO_AUTONOMY = (FRAME_NONE, 0, None)  # a step event's control, interventions, policy_error
# Validate's trial (SharedAutonomy.trial): proposals timed, how long one is waited for (at
# least the budget: how slow a slow policy is must be known), and how long they may take in all.
TRIAL_STEPS = 10
TRIAL_WAIT_S = 2.0
TRIAL_TIME_S = 3.0


class PolicyFailure(RuntimeError):
    """The policy raised, was too slow, or proposed something that is no action."""


def build_policy(target: str, action_spec: Any, observation_spec: Any) -> Any:
    """Import an allowed ``module:function`` and build the policy with it."""
    module, _, name = target.partition(":")
    factory = getattr(import_module(module), name, None)
    if not callable(factory):
        raise PolicyFailure(f"{target!r} is not a policy factory")
    return factory(action_spec, observation_spec)


@dataclass(frozen=True)
class Decision:
    """Who drives this step and with what."""

    action: Any  # executed: the player's or the policy's
    source: int  # HUMAN or POLICY
    human: np.ndarray  # the player's mapped action, flattened
    proposal: np.ndarray | None  # the policy's, flattened (None: it proposed nothing)


class SharedAutonomy:
    """Arbitration between one policy and the player (see the module doc)."""

    def __init__(
        self,
        policy: Any,
        flatten: Callable[[Any], np.ndarray],
        unflatten: Callable[[np.ndarray], Any],
        bounds: tuple[np.ndarray, np.ndarray],
        *,
        release_delay_s: float,
        budget_s: float,
        clock: Callable[[], float] = time.monotonic,
        build_error: str | None = None,
    ) -> None:
        self.policy = policy
        self.flatten, self.unflatten = flatten, unflatten
        self.low, self.high = bounds
        self.release_delay_s = release_delay_s
        self.budget_s = budget_s
        self.clock = clock
        self.build_error = build_error
        self.error: str | None = build_error
        self.human_until = float("-inf")  # the player drives until then
        self.interventions = 0  # takeovers this episode (policy → player)
        self.source = POLICY
        self._runner = _Runner()

    def reset(self) -> None:
        """A new episode: the policy drives again (unless it could not be built)."""
        self.error, self.human_until, self.interventions = self.build_error, float("-inf"), 0
        self.source = POLICY if self.error is None else HUMAN
        reset = getattr(self.policy, "reset", None)
        if self.error is None and callable(reset):
            try:
                self._call(reset)
            except Exception as exc:
                self.error, self.source = _reason(exc), HUMAN

    @property
    def failed(self) -> bool:
        return self.error is not None

    def decide(self, observation: Any, human_action: Any, human_active: bool) -> Decision:
        """The action of this step, who chose it, and what both proposed."""
        human = self.flatten(human_action)
        proposal = None if self.failed else self._propose(observation)
        now = self.clock()
        if human_active:
            self.human_until = now + self.release_delay_s
        source = HUMAN if proposal is None or human_active or now < self.human_until else POLICY
        if source == HUMAN and self.source == POLICY and not self.failed:
            self.interventions += 1
        self.source = source
        if source == POLICY:
            assert proposal is not None
            return Decision(self.unflatten(proposal), POLICY, human, proposal)
        return Decision(human_action, HUMAN, human, proposal)

    def step(self, observation: Any, human_action: Any, human_active: bool) -> tuple[Any, str]:
        """The action to execute and the step's ``control`` record (JSON text)."""
        decision = self.decide(observation, human_action, human_active)
        return decision.action, control_record(decision)

    def event(self) -> tuple[int, int, str | None]:
        """A step event's last fields: who drives (the frame header's byte), the takeovers so
        far, why the policy stopped (None while it works)."""
        code = FRAME_POLICY if self.source == POLICY else FRAME_HUMAN
        return code, self.interventions, self.error

    def trial(
        self, reset: Callable[[], Any], step: Callable[[Any], Any], steps: int = TRIAL_STEPS
    ) -> dict[str, Any]:
        """Validate's run of the policy (nothing recorded, no player): its ``reset()``, then
        up to ``steps`` proposals, each on the observation its previous proposal led to
        (``reset()`` gives the first, ``step(action)`` the next), timed as a live step's
        (the same thread, the same failures); a proposal is waited for up to
        :data:`TRIAL_WAIT_S` (or the budget, when longer) so that a slow one's time is known.
        What it shows: :func:`trial_report`."""
        self.reset()
        wait = max(self.budget_s, TRIAL_WAIT_S)
        times: list[float] = []
        observation = None if self.failed else reset()
        while not self.failed and len(times) < steps and sum(times) < TRIAL_TIME_S * 1000:
            started = time.perf_counter()
            proposal = self._propose(observation, wait)
            times.append((time.perf_counter() - started) * 1000)
            if proposal is not None:
                observation = step(self.unflatten(proposal))
        return trial_report(times, self.budget_s * 1000, self.error)

    def _propose(self, observation: Any, wait_s: float | None = None) -> np.ndarray | None:
        try:
            raw = self._call(self.policy.act, observation, wait_s=wait_s)
            vec = np.asarray(self.flatten(raw), dtype=np.float64)
            if vec.shape != self.low.shape:
                raise PolicyFailure(f"proposed {vec.size} values for an action of {self.low.size}")
            if not np.all(np.isfinite(vec)):
                raise PolicyFailure("proposed an action that is not finite")
            return np.clip(vec, self.low, self.high)
        except Exception as exc:
            self.error = _reason(exc)
            return None

    def _call(self, fn: Callable[..., Any], *args: Any, wait_s: float | None = None) -> Any:
        """``fn(*args)`` on the policy's thread, waited for ``wait_s`` (the budget by default)."""
        wait = self.budget_s if wait_s is None else wait_s
        try:
            return self._runner.call(fn, args, wait)
        except TimeoutError:
            self._runner = _Runner()  # the late one's answer must not be taken for the next
            budget = f"its {self.budget_s * 1000:.0f} ms budget"
            if wait > self.budget_s:
                budget = f"{wait * 1000:.0f} ms ({budget})"
            raise PolicyFailure(f"{_SLOW} {budget}") from None


def trial_report(times_ms: list[float], budget_ms: float, error: str | None) -> dict[str, Any]:
    """What a trial showed: ``steps`` (proposals timed), ``median_ms`` and ``worst_ms`` (None
    without any), ``budget_ms``, ``error`` (why it stopped, None while it works), ``failed``
    (it raised, proposed no action, or could not be built) and ``over_budget`` (its median is
    past the budget, or it did not answer at all)."""
    median = float(np.median(times_ms)) if times_ms else None
    slow = error is not None and failure_kind(error) == "slow"
    return {
        "steps": len(times_ms), "median_ms": median,
        "worst_ms": max(times_ms) if times_ms else None, "budget_ms": budget_ms,
        "error": error, "failed": error is not None and not slow,
        "over_budget": slow or (median is not None and median > budget_ms),
    }  # fmt: skip


def failure_kind(error: str) -> str:
    """Why the policy stopped, for the player's words: ``slow`` (it missed its step budget)
    or ``failed`` (it raised, proposed no action, or could not be built)."""
    return "slow" if error.startswith(f"{PolicyFailure.__name__}: {_SLOW}") else "failed"


_SLOW = "the policy took longer than"


def _reason(exc: BaseException) -> str:
    """Why the policy stopped, for the designer (``policy_error``)."""
    return f"{type(exc).__name__}: {exc}"[:500]


class _Runner:
    """A daemon thread that runs the policy, so that a step can stop waiting for a policy
    that hangs (and the worker can still exit: the thread is a daemon)."""

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.results: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="policy", daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, args = self.requests.get()
            try:
                self.results.put((True, fn(*args)))
            except Exception as exc:
                self.results.put((False, exc))

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        """``fn(*args)`` on the thread; :class:`TimeoutError` after ``timeout`` seconds."""
        self.requests.put((fn, args))
        try:
            ok, value = self.results.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        if not ok:
            raise value
        return value


def flatten(action: Any, spec: Any) -> np.ndarray:
    """An action (the spec's shape, or already flat) as one float64 vector, leaves in the
    spec's order (the input mapper's)."""
    if isinstance(spec, dict) and isinstance(action, dict):
        return np.concatenate([flatten(action[k], spec[k]) for k in spec])
    if isinstance(spec, tuple | list) and isinstance(action, tuple | list):
        return np.concatenate([flatten(a, s) for a, s in zip(action, spec, strict=True)])
    return np.asarray(action, dtype=np.float64).reshape(-1)


def control_record(decision: Decision) -> str:
    """The step's ``control`` metadata (JSON text; ``server/recording/format.py``)."""
    proposal = None if decision.proposal is None else decision.proposal.tolist()
    return json.dumps(
        {"source": SOURCE_NAMES[decision.source], "human": decision.human.tolist(),
         "policy": proposal},
        separators=(",", ":"),
    )  # fmt: skip


def shared_autonomy(
    policy: PolicySpec | None, adapter: Any, mapper: ActionMapper, allowed: AllowedEnvironments
) -> SharedAutonomy | None:
    """The arbitration of an environment with a policy (None without one). A policy the
    operator does not allow is refused (:class:`NotAllowed`); one that cannot be built
    leaves the player driving, with the reason as the episodes' ``policy_error``."""
    if policy is None:
        return None
    target = allowed.policy_target(policy.id)
    if target is None:
        raise NotAllowed(allowed.policy_problems(policy))
    built, error = None, None
    try:
        built = build_policy(target, adapter.action_spec(), adapter.observation_spec())
    except Exception as exc:
        error = f"cannot build policy {policy.id!r}: {type(exc).__name__}: {exc}"[:500]
    return SharedAutonomy(
        built, partial(flatten, spec=mapper.spec), partial(unflatten, mapper.spec),
        (mapper.low, mapper.high),
        release_delay_s=policy.takeover.release_delay_s,
        budget_s=allowed.policy_budget_ms / 1000.0, build_error=error,
    )  # fmt: skip
