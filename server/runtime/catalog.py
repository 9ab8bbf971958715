"""Registry of environments known to work here, and validation of study environments.

Each :class:`CatalogEntry` gives a source (Gymnasium id or dm_env factory, plus fixed
kwargs), default controls, mode and fps, and a JSON Schema of its settings (kwargs) for the
study editor. :func:`validate_environment` is what the study API calls: it returns problems
with their field paths, never raises, and imports nothing (a suite's presence is looked up).
"""

from __future__ import annotations

import copy
import importlib.util
import json
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from server.runtime import runtimes
from server.runtime._catalog_data import ATARI_CONTROLS, ATARI_SCHEMA, ENTRIES, SUITES
from server.runtime._settings_docs import described
from server.runtime.regeneration import Regenerable
from server.study_spec import Controls, DmEnvSource, EnvironmentSpec, GymnasiumSource

if TYPE_CHECKING:
    from server.runtime.allowlist import AllowedEnvironments, Problem


@dataclass(frozen=True)
class CatalogEntry:
    """One known environment (a Gymnasium id, or a dm_env factory) with its defaults."""

    key: str
    suite: str
    mode: str
    fps: int
    controls: Controls
    schema: dict[str, Any]
    id: str | None = None
    factory: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    pace: str | None = None  # why ``fps`` is slower than real time (None: it is real time)
    # settings the source starts with, not required to match (unlike ``kwargs``)
    defaults: dict[str, Any] = field(default_factory=dict)
    # the settings that draw its observation's images again at export (None: it cannot)
    regenerate: Regenerable | None = None
    # what each dimension of a vector action means (an arm's x, y, z, roll, pitch, yaw,
    # gripper): the controls editor's rows and the player's legend groups say so
    dimensions: tuple[str, ...] = ()
    # a manipulation task: its participants may end an episode when the task is done
    # ("I'm done"), unless the study's environment says otherwise (``allow_end``)
    manipulation: bool = False

    @property
    def extra(self) -> str | None:
        """The pyproject optional-dependency group that installs this suite (None: core)."""
        return SUITES[self.suite][1]

    @property
    def runtime(self) -> str:
        """The runtime its workers run in (:mod:`server.runtime.runtimes`)."""
        return runtimes.runtime_of_suite(self.suite)

    def installed(self) -> bool:
        """Whether it can run here: its suite's modules import in its runtime, which is
        installed and fits the worker code."""
        return suite_state(self.suite)["state"] == "installed"

    def source(self) -> GymnasiumSource | DmEnvSource:
        """The study source that builds this entry with its default settings."""
        kwargs = {**copy.deepcopy(self.defaults), **self.kwargs}
        if self.id is not None:
            return GymnasiumSource(id=self.id, kwargs=kwargs)
        assert self.factory is not None
        return DmEnvSource(factory=self.factory, kwargs=kwargs)

    @property
    def action_type(self) -> str:
        """``discrete`` (actions chosen by index or name) or ``continuous`` (vectors)."""
        c = self.controls
        values = [*c.keys.values(), *c.buttons.values(), c.noop]
        values += [v for a in c.axes for v in (a.negative, a.positive)]
        return "discrete" if any(isinstance(v, int | str) for v in values) else "continuous"

    def public(self) -> dict[str, Any]:
        """JSON-able description for the editor."""
        return {
            "key": self.key,
            "name": self.key,
            "suite": self.suite,
            "action_type": self.action_type,
            "source": self.source().model_dump(),
            "mode": self.mode,
            "fps": self.fps,
            "pace": self.pace,
            "controls": self.controls.model_dump(),
            "dimensions": list(self.dimensions),
            "settings_schema": self.schema,
            "installed": self.installed(),
            "extra": self.extra,
            "runtime": suite_state(self.suite),
            "allow_end": self.manipulation,  # the default of an environment's ``allow_end``
        }


CATALOG: dict[str, CatalogEntry] = {
    e["key"]: CatalogEntry(**{**e, "schema": described(e["key"], e["suite"], e["schema"])})
    for e in ENTRIES
}
_ATARI_SCHEMA = described("", "atari", ATARI_SCHEMA)


@cache
def suite_installed(suite: str) -> bool:
    """True when all modules of ``suite`` are importable here (checked without importing)."""
    modules = SUITES[suite][0]
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def suite_state(suite: str) -> dict[str, Any]:
    """Where ``suite`` runs and whether it can: ``{"name", "state", "message", "command"}``
    of its runtime (``state``: installed, not_installed, outdated or failed)."""
    runtime = runtimes.runtime_of_suite(suite)
    if runtime != runtimes.APP:
        return runtimes.state(runtime).public()
    if suite_installed(suite):
        return runtimes.APP_STATE.public()
    extra = SUITES[suite][1]
    command = f"pip install 'rlds-studio[{extra}]'" if extra else None
    message = f"the {suite} suite is not installed in the app's environment"
    return {"name": runtimes.APP, "state": "not_installed",
            "message": f"{message}: run `{command}`" if command else message,
            "command": command}  # fmt: skip


def find_entry(source: GymnasiumSource | DmEnvSource) -> CatalogEntry | None:
    """The most specific entry matching ``source`` (its fixed kwargs all match), or None.

    Any ``ALE/<Game>-v5`` id not listed gets a generic Atari entry.
    """
    best: CatalogEntry | None = None
    for entry in CATALOG.values():
        same = entry.id == source.id if isinstance(source, GymnasiumSource) else False
        if isinstance(source, DmEnvSource):
            same = entry.factory == source.factory
        fixed = all(source.kwargs.get(k, _MISSING) == v for k, v in entry.kwargs.items())
        if same and fixed and (best is None or len(entry.kwargs) > len(best.kwargs)):
            best = entry
    if best is None and isinstance(source, GymnasiumSource) and source.id.startswith("ALE/"):
        best = CatalogEntry(
            key=source.id, suite="atari", id=source.id, mode="async", fps=15,
            controls=ATARI_CONTROLS, schema=_ATARI_SCHEMA,
        )  # fmt: skip
    return best


_MISSING = object()


def runtime_of(source: GymnasiumSource | DmEnvSource) -> str:
    """The runtime a study source's workers run in: its catalog suite's (the app's for a
    source the catalog does not know: an operator's Gymnasium package or dm_env factory)."""
    entry = find_entry(source)
    return runtimes.APP if entry is None else runtimes.runtime_of_suite(entry.suite)


def is_catalog_id(env_id: str) -> bool:
    """Whether a Gymnasium id is one of the catalog's (any ``ALE/<Game>-v5`` included)."""
    return env_id.startswith("ALE/") or any(e.id == env_id for e in CATALOG.values())


def default_controls(source: GymnasiumSource | DmEnvSource) -> Controls:
    """The catalog's controls for ``source`` (empty controls when unknown)."""
    entry = find_entry(source)
    return entry.controls if entry is not None else Controls()


def action_dimensions(source: GymnasiumSource | DmEnvSource) -> tuple[str, ...]:
    """What each dimension of ``source``'s vector action means, from the catalog (empty when
    it does not say)."""
    entry = find_entry(source)
    return entry.dimensions if entry is not None else ()


def allows_end(env: EnvironmentSpec) -> bool:
    """Whether the participant may end an episode of ``env`` at any step: its ``allow_end``,
    else on for the catalog's manipulation tasks."""
    if env.allow_end is not None:
        return env.allow_end
    entry = find_entry(env.source)
    return entry is not None and entry.manipulation


def validate_environment(env_spec: EnvironmentSpec, allowed: AllowedEnvironments) -> list[Problem]:
    """Why ``env_spec`` cannot run here, as far as the app process can tell. Never raises.

    Imports nothing a designer named: the allow-list, the suite's presence, the catalog's
    settings schema and the controls' presence are checked here; building the environment
    and checking its controls against its action spec happens in a worker
    (:mod:`server.runtime.probe`). Problems are ``(field path in the env spec, message)``.
    """
    try:
        return _validate(env_spec, allowed)
    except Exception as exc:  # a broken suite lookup must not crash the study API
        return [(("source",), f"cannot check environment: {type(exc).__name__}: {exc}")]


def _validate(env_spec: EnvironmentSpec, allowed: AllowedEnvironments) -> list[Problem]:
    source = env_spec.source
    problems = allowed.source_problems(source) + allowed.policy_problems(env_spec.policy)
    if problems:
        return problems
    entry = find_entry(source)
    if entry is not None and not entry.installed():
        found = suite_state(entry.suite)
        runtime = found["name"]
        where = "" if runtime == runtimes.APP else f" (it runs in the {runtime} runtime)"
        return [(("source",), f"{entry.key!r} cannot run here{where}: {found['message']}")]
    if entry is not None:
        problems += [
            (("source", "kwargs", name), message)
            for name, message in settings_problems(source.kwargs, entry.schema, fixed=entry.kwargs)
        ]
    if env_spec.controls is None and entry is None:
        problems.append((("controls",), "no default controls for this environment: set 'controls'"))
    return problems


_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "object": (dict,),
    "array": (list,),
}


def settings_problems(
    kwargs: dict[str, Any], schema: dict[str, Any], *, fixed: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``(setting, message)`` for each setting that breaks ``schema`` (unknown ones included)."""
    props = schema.get("properties", {})
    problems = []
    for name, value in kwargs.items():
        if fixed and name in fixed:
            continue
        prop = props.get(name)
        if prop is None:
            if schema.get("additionalProperties", True) is False:
                problems.append((name, f"unknown setting {name!r}; known: {sorted(props)}"))
            continue
        kinds = _TYPES.get(prop.get("type", ""), (object,))
        wrong_bool = isinstance(value, bool) and bool not in kinds
        if not isinstance(value, kinds) or wrong_bool:
            problems.append((name, f"setting {name!r} must be of type {prop['type']}"))
            continue
        if "enum" in prop and value not in prop["enum"]:
            allowed = ", ".join(json.dumps(v) for v in prop["enum"])
            problems.append((name, f"setting {name!r} must be one of {allowed} (not {value!r})"))
            continue
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            problems.append((name, f"setting {name!r} must be {_range(low, high)} (not {value!r})"))
    return problems


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"from {low:g} to {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"


def catalog_public() -> list[dict[str, Any]]:
    """Every entry as JSON for the editor (with its installed check)."""
    return [entry.public() for entry in CATALOG.values()]
