"""What shared autonomy adds to a worker's step: ``SharedAutonomy.step`` (the policy's
proposal on its thread, the player's mapped action, the record's JSON) against the input
mapping alone, on FetchPickAndPlace with the scripted ``fetch-pick-place-scripted`` policy.

The environment's own step is outside both timings (it is the same with and without a
policy). Prints JSON (milliseconds: median, p90, p99) and the policy's success: whether the
episodes it drove alone reached the goal. ``--smoke`` runs a few steps: it checks that the
benchmark still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/autonomy.py [--episodes 5] [--steps 100] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from server.runtime.adapters import build_adapter  # noqa: E402
from server.runtime.allowlist import AllowedEnvironments  # noqa: E402
from server.runtime.autonomy import shared_autonomy  # noqa: E402
from server.runtime.catalog import CATALOG, default_controls  # noqa: E402
from server.runtime.input_mapping import ActionMapper  # noqa: E402
from server.study_spec import PolicySpec  # noqa: E402

POLICY = "fetch-pick-place-scripted=server.runtime.scripted_policies:fetch_pick_place"


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"median": round(statistics.median(ordered), 4), "p90": round(pick(0.9), 4),
            "p99": round(pick(0.99), 4)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    episodes, steps = (1, 10) if args.smoke else (args.episodes, args.steps)
    entry = CATALOG["FetchPickAndPlace"]
    if not entry.installed():
        print(json.dumps({"skipped": "the robotics runtime is not installed"}))
        return
    allowed = AllowedEnvironments.of(policies=[POLICY], policy_budget_ms=1000)
    adapter = build_adapter(entry.source(), allowed)
    mapper = ActionMapper(adapter.action_spec(), default_controls(entry.source()))
    auto = shared_autonomy(PolicySpec(id="fetch-pick-place-scripted"), adapter, mapper, allowed)
    assert auto is not None
    idle = {"keys": [], "buttons": {}, "axes": []}
    mapping_ms, shared_ms, reached = [], [], 0
    for episode in range(episodes):
        adapter.set_seed(episode)
        auto.reset()
        timestep = adapter.reset()
        for _ in range(steps):
            started = time.perf_counter()
            action = mapper(idle)
            mapped = time.perf_counter()
            action, _ = auto.step(timestep.observation, action, mapper.human_active(idle))
            shared_ms.append((time.perf_counter() - started) * 1000)
            mapping_ms.append((mapped - started) * 1000)
            timestep = adapter.step(action)
            if timestep.last():
                break
        obs = timestep.observation
        reached += int(np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]) < 0.05)
    adapter.close()
    print(json.dumps({
        "env": "FetchPickAndPlace", "policy": "fetch-pick-place-scripted",
        "episodes": episodes, "steps_per_episode": steps, "load_average": os.getloadavg()[0],
        "input_mapping_ms": summary(mapping_ms), "mapping_plus_autonomy_ms": summary(shared_ms),
        "policy_error": auto.error, "goal_reached": f"{reached}/{episodes}",
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
