"""The Gymnasium ids registered by the packages the operator allows, for the editor's picker.

Listing them means importing those packages, which the app process never does: a short
child process (``python -m server.runtime.gym_ids PACKAGE...``) imports them and prints the
ids whose entry point lives in one of them, as JSON. The answer is kept per package list.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache

LIST_TIMEOUT_S = 60.0


def registered_ids(packages: list[str]) -> list[str]:
    """In this process: import each package (a missing one is skipped) and list its ids."""
    import gymnasium as gym

    from server.runtime.registration import EnvBuildError, lives_in, register_suites

    for package in packages:
        try:
            register_suites([package])
        except EnvBuildError:
            continue
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if ":" not in env_id and any(lives_in(spec.entry_point, p) for p in packages)
    )


@lru_cache(maxsize=8)
def _listed(packages: tuple[str, ...], timeout_s: float) -> tuple[str, ...]:
    done = subprocess.run(
        [sys.executable, "-m", "server.runtime.gym_ids", *packages],
        capture_output=True, text=True, timeout=timeout_s, check=True,
    )  # fmt: skip
    ids = json.loads(done.stdout.strip().splitlines()[-1])
    return tuple(i for i in ids if isinstance(i, str))


def allowed_gym_ids(
    packages: tuple[str, ...], timeout_s: float = LIST_TIMEOUT_S
) -> tuple[str, ...]:
    """The ids of ``packages``, listed by a child process once; empty when that fails (and
    then asked again next time)."""
    if not packages:
        return ()
    try:
        return _listed(packages, timeout_s)
    except (subprocess.SubprocessError, OSError, ValueError, IndexError):
        return ()


if __name__ == "__main__":
    print(json.dumps(registered_ids(sys.argv[1:])))
