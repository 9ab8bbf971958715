"""Build a study's environments in real workers to check them before a study starts.

The app process never imports a designer-named module: a probe starts an
:class:`~server.runtime.worker.EnvWorker` (which checks the allow-list first), reads what
the worker reports (build errors, controls that fit no action of the real action spec) and
closes it. Nothing is recorded: no episode is begun.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from server.runtime.allowlist import AllowedEnvironments, Problem
from server.runtime.worker import EnvWorker, RemoteError, WorkerError, WorkerTimeout
from server.study_spec import EnvironmentSpec

PARALLEL = 2  # workers built at once by one validation (the machine serves players too)

# The field a worker-side build error is about, by its exception type.
_ERROR_LOC: dict[str, tuple[str, ...]] = {
    "UnknownEnvironment": ("source", "id"),
    "BadSettings": ("source", "kwargs"),
}


async def probe(
    env_spec: EnvironmentSpec, allowed: AllowedEnvironments, *, data_root: Path, timeout: float
) -> list[Problem]:
    """Problems found by building ``env_spec`` in a worker (empty when it runs)."""
    try:
        worker = await EnvWorker.start(
            env_spec, allowed=allowed, study_id="probe", data_root=data_root, timeout=timeout
        )
    except RemoteError as exc:
        return [(_ERROR_LOC.get(exc.kind, ("source",)), exc.message)]
    except WorkerTimeout:
        return [(("source",), f"the environment did not start within {timeout:g} s")]
    except WorkerError as exc:
        return [(("source",), f"the environment's worker failed: {exc}")]
    try:
        # The catalog's own controls may name actions a game lacks on purpose: only the
        # designer's controls are checked.
        if env_spec.controls is None:
            return []
        issues = worker.info["controls"]["issues"]
        return [(("controls", *issue["loc"]), issue["msg"]) for issue in issues]
    finally:
        await worker.close(timeout=5.0)


def probe_all(
    env_specs: Sequence[EnvironmentSpec],
    allowed: AllowedEnvironments,
    *,
    data_root: Path,
    timeout: float,
) -> list[list[Problem]]:
    """:func:`probe` for each spec, a few at a time. Blocks: call it off the event loop."""

    async def run() -> list[list[Problem]]:
        gate = asyncio.Semaphore(PARALLEL)

        async def one(spec: EnvironmentSpec) -> list[Problem]:
            async with gate:
                return await probe(spec, allowed, data_root=data_root, timeout=timeout)

        return list(await asyncio.gather(*(one(spec) for spec in env_specs)))

    return asyncio.run(run())
