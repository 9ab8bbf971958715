"""Build a study's environments in real workers to check them before a study starts.

The app process never imports a designer-named module: a probe starts an
:class:`~server.runtime.worker.EnvWorker` (which checks the allow-list first), reads what
the worker reports (spaces, controls, native rate, build errors, controls that fit no action
of the real action spec), resets it once for a first frame (not recorded), times its
shared-autonomy policy when it has one (``SharedAutonomy.trial``, not recorded either) and
closes it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.runtime.allowlist import AllowedEnvironments, Problem
from server.runtime.worker import EnvWorker, RemoteError, WorkerError, WorkerTimeout
from server.study_spec import EnvironmentSpec, GymnasiumSource

PARALLEL = 2  # workers built at once by one validation (the machine serves players too)

# The field a worker-side build error is about, by its exception type.
_ERROR_LOC: dict[str, tuple[str, ...]] = {
    "UnknownEnvironment": ("source", "id"),
    "BadSettings": ("source", "kwargs"),
}


def build_problem(env_spec: EnvironmentSpec, kind: str, message: str) -> Problem:
    """A worker's build error, at the setting that caused it when the message shows which.

    A setting is named by the message (``Invalid game mode requested`` → ``mode``) or its
    value is quoted there (FrozenLake's ``KeyError: '9x9'`` → ``map_name``); the values the
    catalog or :mod:`._settings_docs` know for it are added.
    """
    from server.runtime._settings_docs import known_values
    from server.runtime.catalog import find_entry

    loc = _ERROR_LOC.get(kind, ("source",))
    kwargs = env_spec.source.kwargs
    if loc[-1:] == ("id",) or not kwargs:
        return loc, message
    words = set(re.findall(r"[a-z0-9]+", message.lower()))
    named = [k for k in kwargs if set(k.lower().split("_")) <= words]
    quoted = [k for k, v in kwargs.items() if isinstance(v, str | int) and not isinstance(v, bool)
              and re.search(rf"(^|['\"\s]){re.escape(str(v))}(['\"\s]|$)", message)]  # fmt: skip
    culprits = named if len(named) == 1 else quoted if len(quoted) == 1 else []
    if not culprits:
        return loc, message
    name = culprits[0]
    entry = find_entry(env_spec.source)
    prop = entry.schema.get("properties", {}).get(name, {}) if entry else {}
    values = prop.get("enum")
    if values is None and isinstance(env_spec.source, GymnasiumSource):
        values = known_values(env_spec.source.id, name)
    text = f"setting {name!r} = {kwargs[name]!r} was refused by the environment: {message}"
    if values:
        text += f"; accepted values: {', '.join(json.dumps(v) for v in values)}"
    return ("source", "kwargs", name), text


class _Counter:
    """Workers started by probes in this process (tests read it to see the cache at work)."""

    starts = 0


STARTS = _Counter()


@dataclass
class Inspection:
    """What building one environment in a worker showed."""

    problems: list[Problem] = field(default_factory=list)
    info: dict[str, Any] | None = None  # EnvWorker.info when it built
    frame: bytes | None = None  # JPEG of the first observation
    policy: dict[str, Any] | None = None  # the policy's trial (SharedAutonomy.trial), if any
    replay: dict[str, Any] | None = None  # the determinism trial (replay_check.trial)
    transient: bool = False  # a timeout or crash: may not happen again (not to be cached)


async def inspect(
    env_spec: EnvironmentSpec, allowed: AllowedEnvironments, *, data_root: Path, timeout: float
) -> Inspection:
    """Build ``env_spec`` in a worker, reset it once and read its spaces and first frame."""
    STARTS.starts += 1
    try:
        worker = await EnvWorker.start(
            env_spec, allowed=allowed, study_id="probe", data_root=data_root, timeout=timeout
        )
    except RemoteError as exc:
        return Inspection([build_problem(env_spec, exc.kind, exc.message)])
    except WorkerTimeout:
        return Inspection([(("source",), f"the environment did not start within {timeout:g} s")],
                          transient=True)  # fmt: skip
    except WorkerError as exc:
        return Inspection([(("source",), f"the environment's worker failed: {exc}")],
                          transient=True)  # fmt: skip
    try:
        # The catalog's own controls may name actions a game lacks on purpose: only the
        # designer's controls are checked.
        problems: list[Problem] = []
        if env_spec.controls is not None:
            issues = worker.info["controls"]["issues"]
            problems = [(("controls", *issue["loc"]), issue["msg"]) for issue in issues]
        seed = env_spec.seeds[0] if env_spec.seeds else 0
        try:
            preview = await worker.preview(seed=seed)
        except RemoteError as exc:
            problems.append((("source",), f"the environment failed to reset or render: {exc}"))
            return Inspection(problems, worker.info)
        except WorkerError as exc:
            problems.append((("source",), f"the environment's worker failed on reset: {exc}"))
            return Inspection(problems, worker.info, transient=True)
        inspection = Inspection(problems, worker.info, preview["frame"])
        if env_spec.policy is not None:
            try:
                trial = await worker.policy_trial(seed=seed, timeout=timeout)
            except RemoteError as exc:
                problems.append((("source",), f"the environment failed on a step its policy "
                                              f"drove: {exc}"))  # fmt: skip
            except WorkerError as exc:
                problems.append((("source",), f"the environment's worker failed while its "
                                              f"policy drove: {exc}"))  # fmt: skip
                inspection.transient = True
            else:
                inspection.policy = trial and {"id": env_spec.policy.id, **trial}
        inspection.replay = await _replay_trial(worker, seed, timeout)
        if inspection.replay.get("transient"):
            inspection.transient = True
        return inspection
    finally:
        await worker.close(timeout=5.0)


async def _replay_trial(worker: EnvWorker, seed: int, timeout: float) -> dict[str, Any]:
    """Whether the environment replays (``replay_check.trial``); a replay that raised is
    one that does not replay, with the error."""
    try:
        return await worker.replay_trial(seed=seed, timeout=timeout)
    except RemoteError as exc:
        error = f"a fresh copy of the environment raised while replaying: {exc}"
        return {"replays": False, "declared": False, "steps": 0, "difference": None,
                "error": error}  # fmt: skip
    except WorkerError as exc:
        error = f"the worker failed during the replay check: {exc}"
        return {"replays": None, "declared": False, "steps": 0, "difference": None,
                "error": error, "transient": True}  # fmt: skip


async def probe(
    env_spec: EnvironmentSpec, allowed: AllowedEnvironments, *, data_root: Path, timeout: float
) -> list[Problem]:
    """Problems found by building ``env_spec`` in a worker (empty when it runs)."""
    return (await inspect(env_spec, allowed, data_root=data_root, timeout=timeout)).problems


def inspect_all(
    env_specs: Sequence[EnvironmentSpec],
    allowed: AllowedEnvironments,
    *,
    data_root: Path,
    timeout: float,
    parallel: int = PARALLEL,
) -> list[Inspection]:
    """:func:`inspect` for each spec, ``parallel`` at a time. Blocks: call it off the loop."""

    async def run() -> list[Inspection]:
        gate = asyncio.Semaphore(parallel)

        async def one(spec: EnvironmentSpec) -> Inspection:
            async with gate:
                return await inspect(spec, allowed, data_root=data_root, timeout=timeout)

        return list(await asyncio.gather(*(one(spec) for spec in env_specs)))

    return asyncio.run(run())
