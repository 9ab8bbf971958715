"""Validation's cache stays bounded (the least recently used reports go first); a policy
is timed in the worker, cached with the rest, and the checklist tells what it showed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from server.core.config import Settings
from server.errors import Invalid
from server.runtime import probe
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.autonomy import TRIAL_STEPS
from server.services.studies import env_validation, launch_check
from server.study_spec import StudySpec
from tests.player.conftest import counter_env, spec
from tests.runtime.fake_envs import FACTORIES
from tests.runtime.fake_policies import ALLOWED as POLICIES
from tests.runtime.fake_policies import STEADY_S


def test_the_cache_keeps_the_most_recently_used(tmp_path: Path) -> None:
    folder = env_validation.cache_dir(tmp_path)
    folder.mkdir(parents=True)
    keys = [f"{i:064x}" for i in range(5)]
    for age, key in enumerate(keys):
        (folder / f"{key}.json").write_text("{}")
        (folder / f"{key}.jpg").write_bytes(b"jpeg")
        os.utime(folder / f"{key}.json", (1000 + age, 1000 + age))
    assert env_validation._cached(tmp_path, keys[0]) == {}  # used now: kept
    assert env_validation.prune_cache(tmp_path, keep=3) == 2
    left = sorted(p.name for p in folder.iterdir())
    kept = sorted([keys[0], keys[3], keys[4]])
    assert left == sorted([f"{k}.jpg" for k in kept] + [f"{k}.json" for k in kept])
    assert env_validation.prune_cache(tmp_path, keep=3) == 0


# -- a policy timed by Validate (real workers, the fake policies of tests/runtime) ----------


def _policy_study(policy_id: str) -> StudySpec:
    env = counter_env(mode="async", fps=10)  # an episode of 5 steps: the trial resets once
    env["policy"] = {"id": policy_id}
    return StudySpec.model_validate({**spec(env), "crowd": {"platforms": ["direct"]}})


def _validated(settings: Settings, policy_id: str, budget_ms: float):  # type: ignore[no-untyped-def]
    allowed = AllowedEnvironments.of((), FACTORIES, POLICIES, policy_budget_ms=budget_ms)
    study = _policy_study(policy_id)
    (report,) = env_validation.validate_study(study, settings, allowed)
    return report, launch_check.checklist(study, [report])


def _policy_items(items: list[dict]) -> list[dict]:
    return [i for i in items if i["field"] == "environments.0.policy.id"]


def test_a_fast_policy_is_timed_under_its_budget_and_cached(settings: Settings) -> None:
    # a generous budget: the two shared cores of a test machine are no measure of speed
    report, items = _validated(settings, "gives-two", 1000)
    timing = report["policy"]
    assert timing["id"] == "gives-two" and timing["steps"] == TRIAL_STEPS
    assert 0 < timing["median_ms"] <= timing["worst_ms"] < 1000
    assert timing["budget_ms"] == 1000
    assert timing["error"] is None and not timing["failed"] and not timing["over_budget"]
    assert report["ok"] and not report["cached"] and _policy_items(items) == []

    starts = probe.STARTS.starts
    again, _ = _validated(settings, "gives-two", 1000)
    assert again["cached"] and again["policy"] == timing and probe.STARTS.starts == starts
    # another budget is another question: built again
    rebuilt, _ = _validated(settings, "gives-two", 900)
    assert not rebuilt["cached"] and rebuilt["policy"]["budget_ms"] == 900


def test_a_slow_policy_warns_with_its_figures_at_the_policy_field(settings: Settings) -> None:
    report, items = _validated(settings, "slow-always", 50)
    timing = report["policy"]
    assert timing["over_budget"] and not timing["failed"] and timing["error"] is None
    assert timing["median_ms"] >= STEADY_S * 1000 and timing["steps"] == TRIAL_STEPS
    assert report["ok"]  # the environment itself builds
    (item,) = _policy_items(items)
    assert (item["level"], item["code"]) == ("warning", "policy_over_budget")
    assert item["label"] == "Policy"
    median = timing["median_ms"]
    assert item["message"].startswith(f"The policy slow-always takes {median:.0f} ms a step")
    assert "over its 50 ms budget" in item["message"]
    assert f"raise STUDIO_POLICY_STEP_BUDGET_MS above {median:.0f} ms" in item["fix"]
    # 10 steps/s leave 100 ms a step: fewer, for a policy of 150 ms or more
    assert "lower Steps per second (async) to " in item["fix"]


def test_a_failing_policy_is_an_error_with_its_message(settings: Settings) -> None:
    report, items = _validated(settings, "fails-fourth", 1000)
    timing = report["policy"]
    assert timing["failed"] and not timing["over_budget"]
    assert timing["error"] == "ValueError: lost track of the counter"
    assert timing["steps"] == 4  # the fourth proposal raised: the trial stopped there
    (item,) = _policy_items(items)
    assert (item["level"], item["code"], item["label"]) == ("error", "policy_failed", "Policy")
    assert item["message"].startswith(
        "The policy fails-fourth failed in validation: ValueError: lost track of the counter."
    )
    with pytest.raises(Invalid) as refused:
        launch_check.enforce(items, acknowledge_warnings=True)
    assert [i["code"] for i in refused.value.detail] == ["policy_failed"]
