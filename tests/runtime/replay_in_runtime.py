"""Run by a runtime's interpreter (``tests/runtime/test_conformance.py``): the in-process
replay of a catalog entry whose suite lives in a runtime, where its suite imports.

Reads ``(spec_json, inputs, steps, seed)`` pickled on stdin; writes the replay's pickled
``(steps, specs)`` on stdout (as :func:`replay` in the conformance test returns them).
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

from server.runtime.adapters import build_adapter
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.catalog import default_controls
from server.runtime.input_mapping import ActionMapper
from server.study_spec import EnvironmentSpec


def replay(
    spec: EnvironmentSpec, inputs: list[dict[str, Any]], steps: int, seed: int,
    allowed: AllowedEnvironments,
) -> tuple[list[tuple[Any, Any]], tuple[Any, Any]]:  # fmt: skip
    """The adapter run here: ``[(timestep, action)]`` for FIRST and each step, and its
    observation and action specs."""
    adapter = build_adapter(spec.source, allowed)
    try:
        adapter.max_steps = spec.max_steps
        mapper = ActionMapper(
            adapter.action_spec(), default_controls(spec.source), adapter.action_meanings
        )
        adapter.set_seed(seed)
        out = [(adapter.reset(), None)]
        # The worker renders every timestep; so does the replay: a render may touch the
        # simulation's state (Fetch's calls mj_forward, which updates MuJoCo's warm start).
        adapter.frame()
        for raw in inputs[:steps]:
            action = mapper(raw)
            out.append((adapter.step(action), action))
            adapter.frame()
        return out, (adapter.observation_spec(), adapter.action_spec())
    finally:
        adapter.close()


def main() -> None:
    spec_json, inputs, steps, seed = pickle.load(sys.stdin.buffer)
    spec = EnvironmentSpec.model_validate_json(spec_json)
    result = replay(spec, inputs, steps, seed, AllowedEnvironments.of())
    sys.stdout.buffer.write(pickle.dumps(result))


if __name__ == "__main__":
    main()
