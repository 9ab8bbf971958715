"""Shared autonomy's arbitration: the policy drives, the player takes over at once and hands
back after the release delay; a failing or slow policy hands over for the episode."""

from __future__ import annotations

import json
import threading
from functools import partial

import numpy as np
import pytest
from dm_env import specs

from server.runtime.action_spec import unflatten
from server.runtime.allowlist import AllowedEnvironments, NotAllowed
from server.runtime.autonomy import (
    HUMAN,
    POLICY,
    TRIAL_WAIT_S,
    SharedAutonomy,
    failure_kind,
    flatten,
    shared_autonomy,
)
from server.runtime.input_mapping import ActionMapper
from server.study_spec import Controls, PolicySpec

SPEC = specs.BoundedArray((2,), np.float32, -1.0, 1.0)
CONTROLS = Controls(keys={"ArrowUp": [0, 1]}, axes=[{"axis": 0, "dim": 0}], deadzone=0.2)
HELD = {"keys": ["ArrowUp"]}
IDLE = {"keys": []}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Forward:
    """Always full speed ahead on dimension 0."""

    resets = 0

    def reset(self) -> None:
        self.resets += 1

    def act(self, _observation: object) -> list[float]:
        return [1.0, 0.0]


def arbiter(
    policy: object, clock: Clock, budget_s: float = 1.0
) -> tuple[SharedAutonomy, ActionMapper]:
    mapper = ActionMapper(SPEC, CONTROLS)
    auto = SharedAutonomy(
        policy, partial(flatten, spec=SPEC), partial(unflatten, SPEC),
        (mapper.low, mapper.high),
        release_delay_s=1.0, budget_s=budget_s, clock=clock,
    )  # fmt: skip
    auto.reset()
    return auto, mapper


def drive(auto: SharedAutonomy, mapper: ActionMapper, raw: dict) -> tuple[np.ndarray, dict]:
    action, record = auto.step(None, mapper(raw), mapper.human_active(raw))
    return np.asarray(action), json.loads(record)


def test_takeover_at_once_and_hand_back_after_the_release_delay():
    clock = Clock()
    policy = Forward()
    auto, mapper = arbiter(policy, clock)
    assert policy.resets == 1
    action, record = drive(auto, mapper, IDLE)
    assert record == {"source": "policy", "human": [0.0, 0.0], "policy": [1.0, 0.0]}
    assert action.tolist() == [1.0, 0.0] and auto.source == POLICY
    action, record = drive(auto, mapper, HELD)  # the player presses: theirs at once
    assert record["source"] == "human" and action.tolist() == [0.0, 1.0]
    assert record["policy"] == [1.0, 0.0]  # the proposal is still recorded
    assert auto.interventions == 1
    clock.now += 0.9  # let go: still the player's for the release delay
    action, record = drive(auto, mapper, IDLE)
    assert record["source"] == "human" and action.tolist() == [0.0, 0.0]
    clock.now += 0.2
    assert drive(auto, mapper, IDLE)[1]["source"] == "policy"
    drive(auto, mapper, HELD)  # a second takeover
    assert auto.interventions == 2 and auto.event()[0] == 1
    auto.reset()  # a new episode: the policy again, no takeovers
    assert auto.interventions == 0 and auto.source == POLICY and policy.resets == 2


def test_axes_count_only_when_bound_and_past_the_dead_zone():
    mapper = ActionMapper(SPEC, CONTROLS)
    assert not mapper.human_active({"axes": [0.1, 0.0]})
    assert mapper.human_active({"axes": [0.5]})
    assert not mapper.human_active({"axes": [0.0, 0.9]})  # axis 1 drives nothing
    assert mapper.human_active({"buttons": {"3": 1.0}})


class Raises:
    def act(self, _observation: object) -> list[float]:
        raise ValueError("no cube in sight")


class Hangs:
    def __init__(self) -> None:
        self.release = threading.Event()

    def act(self, _observation: object) -> list[float]:
        self.release.wait(5)
        return [1.0, 0.0]


class NotAnAction:
    def act(self, _observation: object) -> list[float]:
        return [float("nan"), 0.0]


@pytest.mark.parametrize(
    ("policy", "reason", "kind"),
    [(Raises(), "ValueError: no cube in sight", "failed"), (NotAnAction(), "not finite", "failed"),
     (Hangs(), "longer than its 50 ms budget", "slow")],
)  # fmt: skip
def test_a_failing_policy_hands_over_for_the_rest_of_the_episode(policy, reason, kind):
    clock = Clock()
    auto, mapper = arbiter(policy, clock, budget_s=0.05)
    action, record = drive(auto, mapper, IDLE)
    assert record == {"source": "human", "human": [0.0, 0.0], "policy": None}
    assert action.tolist() == [0.0, 0.0]
    assert reason in (auto.error or "")
    assert failure_kind(auto.error or "") == kind  # the player's words: too slow, or failed
    clock.now += 60  # no hand-back: the player drives on, no takeover counted
    assert drive(auto, mapper, IDLE)[1]["source"] == "human"
    assert auto.interventions == 0 and auto.event()[2] == auto.error
    if isinstance(policy, Hangs):
        policy.release.set()


class ResetRaises(Forward):
    def reset(self) -> None:
        raise RuntimeError("no connection to the planner")


def test_a_policy_whose_reset_raises_leaves_the_player_driving():
    auto, mapper = arbiter(ResetRaises(), Clock())
    assert auto.source == HUMAN and "no connection to the planner" in (auto.error or "")
    assert drive(auto, mapper, IDLE)[1] == {"source": "human", "human": [0.0, 0.0], "policy": None}


def test_only_allowed_policies_are_built():
    allowed = AllowedEnvironments.of(policies=["fwd=tests.runtime.test_autonomy:_forward"])
    mapper = ActionMapper(SPEC, CONTROLS)
    spec = PolicySpec(id="fwd")
    auto = shared_autonomy(spec, _Adapter(), mapper, allowed)
    assert auto is not None and auto.error is None
    assert type(auto.policy).__name__ == "Forward"
    with pytest.raises(NotAllowed, match="'other' is not installed"):
        shared_autonomy(PolicySpec(id="other"), _Adapter(), mapper, allowed)
    broken = AllowedEnvironments.of(policies=["fwd=tests.runtime.test_autonomy:_broken"])
    auto = shared_autonomy(spec, _Adapter(), mapper, broken)
    assert auto is not None and "cannot build policy 'fwd'" in (auto.error or "")
    auto.reset()
    assert auto.source == HUMAN


class _Adapter:
    def action_spec(self) -> object:
        return SPEC

    def observation_spec(self) -> object:
        return {}


def _forward(_action_spec: object, _observation_spec: object) -> Forward:
    return Forward()


def _broken(_action_spec: object, _observation_spec: object) -> Forward:
    raise RuntimeError("weights missing")


class Follows:
    """Proposes the observation's value plus one, so the trial's observations show which
    actions were applied."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def act(self, observation: float) -> list[float]:
        self.seen.append(observation)
        return [min(observation + 0.25, 1.0), 0.0]


def test_the_trial_steps_on_the_policys_own_proposals_and_times_each():
    policy = Follows()
    auto, _ = arbiter(policy, Clock())
    applied: list[list[float]] = []

    def step(action: object) -> float:
        applied.append(np.asarray(action).tolist())
        return float(np.asarray(action)[0])

    report = auto.trial(lambda: 0.0, step, steps=4)
    assert policy.seen == [0.0, 0.25, 0.5, 0.75]  # each observation came from its own action
    assert applied == [[0.25, 0.0], [0.5, 0.0], [0.75, 0.0], [1.0, 0.0]]
    assert report["steps"] == 4 and report["budget_ms"] == 1000
    assert 0 <= report["median_ms"] <= report["worst_ms"]
    assert report["error"] is None and not report["failed"] and not report["over_budget"]


def test_a_trial_tells_a_policy_that_raises_from_one_that_never_answers():
    auto, _ = arbiter(Raises(), Clock(), budget_s=0.05)
    report = auto.trial(lambda: None, lambda _action: None)
    assert report["failed"] and not report["over_budget"] and report["steps"] == 1
    assert report["error"] == "ValueError: no cube in sight"
    hangs = Hangs()
    auto, _ = arbiter(hangs, Clock(), budget_s=0.05)
    report = auto.trial(lambda: None, lambda _action: None)
    hangs.release.set()
    # waited for longer than the budget (a slow policy's time is to be known), then given up
    assert report["over_budget"] and not report["failed"] and report["steps"] == 1
    assert report["error"] == (
        f"PolicyFailure: the policy took longer than {TRIAL_WAIT_S * 1000:.0f} ms "
        "(its 50 ms budget)"
    )
    assert report["worst_ms"] >= TRIAL_WAIT_S * 1000
    assert failure_kind(report["error"]) == "slow"
    auto.reset()  # a live episode after the trial: the policy drives again, on the budget
    assert auto.error is None and auto.source == POLICY
