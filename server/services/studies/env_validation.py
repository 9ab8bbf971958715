"""Validate: build each environment in a worker and describe it for the designer.

A report per environment gives its observation and action spaces, the first frame, the
resolved controls, the effective game speed, its policy's timing (``policy``: the trial of
:meth:`server.runtime.autonomy.SharedAutonomy.trial`, None without a policy), whether it
replays (``replay``: :func:`server.runtime.replay_check.trial`, a warning when it does not),
warnings and problems (field paths from the study's root). Reports of environments that
built are cached on disk under the data root, keyed by a hash of the environment's spec
and the operator's allow-list, so an unchanged study validates without starting a worker.
The runtime is imported lazily.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.core.config import Settings
from server.runtime.catalog import action_dimensions, find_entry
from server.study_spec import EnvironmentSpec, StudySpec

if TYPE_CHECKING:
    from threading import Event

    from server.core.budget import ProcessBudget
    from server.runtime.allowlist import AllowedEnvironments, Problem
    from server.runtime.catalog import CatalogEntry
    from server.runtime.probe import Inspection

Loc = tuple[str | int, ...]
CACHE_VERSION = 5  # bump when a report's shape or meaning changes
SPEED_TOLERANCE = 0.05  # effective speeds within 5 % of 1× count as real speed
FRAME_KEY = re.compile(r"^[0-9a-f]{64}$")
_LISTED = 8  # names listed in one warning


def cache_dir(data_root: Path) -> Path:
    """Where validation reports and first frames are kept."""
    return data_root / "cache" / "validation"


def cache_key(env: EnvironmentSpec, allowed: AllowedEnvironments) -> str:
    """Hash of the canonical JSON of the environment's spec and the allow-list (with its
    policy's target and the step budget, when it has a policy)."""
    data: dict[str, Any] = {
        "version": CACHE_VERSION,
        "env": env.model_dump(mode="json"),
        "gym_packages": list(allowed.gym_packages),
        "dm_env_factories": sorted(allowed.dm_env_factories),
    }
    if env.policy is not None:
        data["policy"] = [allowed.policy_target(env.policy.id), allowed.policy_budget_ms]
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def frame_path(data_root: Path, key: str) -> Path | None:
    """The cached first frame of ``key`` (None for a malformed key or no frame)."""
    if not FRAME_KEY.match(key):
        return None
    path = cache_dir(data_root) / f"{key}.jpg"
    return path if path.is_file() else None


def frame_url(key: str) -> str:
    """Where the API serves the first frame cached under ``key``."""
    return f"/api/validation/frames/{key}.jpg"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one


def prune_cache(data_root: Path, keep: int) -> int:
    """Drop the least recently used reports (and their frames) past ``keep``; how many."""
    try:
        reports = list(cache_dir(data_root).glob("*.json"))
    except OSError:
        return 0
    if len(reports) <= keep:
        return 0

    def used(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    stale = sorted(reports, key=used)[: len(reports) - keep]
    for path in stale:
        path.unlink(missing_ok=True)
        path.with_suffix(".jpg").unlink(missing_ok=True)
    return len(stale)


def _cached(data_root: Path, key: str, touch: bool = True) -> dict[str, Any] | None:
    path = cache_dir(data_root) / f"{key}.json"
    try:
        report: dict[str, Any] = json.loads(path.read_text())
        if touch:
            os.utime(path)  # recently used: the last to be pruned
    except (OSError, ValueError):
        return None
    return report


def _items(problems: list[Problem]) -> list[dict[str, Any]]:
    # the source's problems first: they are the first thing to fix
    ordered = sorted(problems, key=lambda p: p[0][:1] != ("source",))
    return [{"loc": list(loc), "msg": msg} for loc, msg in ordered]


def speed(env: EnvironmentSpec, info: dict[str, Any]) -> dict[str, Any]:
    """fps (× frameskip) against the environment's native rate; ``effective`` 1 is real speed.

    ``note``: why the catalog slows this environment down, when it runs at the catalog's
    slowed default (``CatalogEntry.pace``); the speed is then as intended, not a warning.
    """
    native, frameskip = info.get("native_fps"), info.get("frameskip")
    effective = env.fps / native if env.mode == "async" and native else None
    entry = find_entry(env.source)
    note = entry.pace if entry is not None and entry.pace and env.fps == entry.fps else None
    return {
        "mode": env.mode, "fps": env.fps, "native_fps": native, "frameskip": frameskip,
        "effective": effective, "note": note,
    }  # fmt: skip


def _speed_warning(sp: dict[str, Any]) -> Problem | None:
    if sp["mode"] != "async":
        return None
    native, skip, fps = sp["native_fps"], sp["frameskip"], sp["fps"]
    if not native:
        return (("fps",), f"the environment does not tell its real pace: check that {fps} "
                          "steps per second looks right when test-playing")  # fmt: skip
    effective = sp["effective"]
    if abs(effective - 1) <= SPEED_TOLERANCE or sp.get("note"):
        return None
    if skip:
        pace = (f"fps {fps} × frameskip {skip:g} = {fps * skip:g} frames/s against the "
                f"game's {native * skip:g} Hz")  # fmt: skip
    else:
        pace = f"fps {fps} against the environment's {native:g} steps/s"
    fix = f"set fps to {native:g}" if float(native).is_integer() and native <= 120 else "change fps"
    return (("fps",), f"plays at {effective:.2f}× real speed ({pace}); {fix} for real speed")


def _listing(names: list[str]) -> str:
    return ", ".join(names[:_LISTED]) + (" …" if len(names) > _LISTED else "")


def _unbound(env: EnvironmentSpec, info: dict[str, Any]) -> list[Any]:
    """Actions no control reaches, less those the designer marked "not for players"."""
    controls = info.get("controls") or {}
    meanings = [str(m) for m in info.get("action_meanings") or []]
    marked: set[str] = set()
    for action in env.controls.not_for_players if env.controls else []:
        marked.add(str(action))  # by name or by index, whichever the report uses
        if isinstance(action, int) and 0 <= action < len(meanings):
            marked.add(meanings[action])
        elif isinstance(action, str) and action in meanings:
            marked.add(str(meanings.index(action)))
    return [a for a in controls.get("unbound") or [] if str(a) not in marked]


def unbound_problem(env: EnvironmentSpec, info: dict[str, Any]) -> Problem | None:
    """Actions a player could never send block activation, unless marked not for players."""
    unbound = _unbound(env, info)
    if not unbound:
        return None
    action = info.get("action_spec")
    discrete = isinstance(action, dict) and action.get("shape") == []
    dims = () if discrete else action_dimensions(env.source)  # "3 (roll)": what it means
    named = [
        f"{a} ({dims[a]})" if isinstance(a, int) and a < len(dims) else str(a) for a in unbound
    ]
    names = _listing(named)
    what, reach = (
        ("Action", "key or button") if discrete else ("Action dimension", "key, button or stick")
    )
    if len(unbound) == 1:
        return (("controls",), f"{what} {names} has no {reach}: bind one, or tick "
                               "“not for players” on it")  # fmt: skip
    return (("controls",), f"{what}s {names} have no {reach}: bind one to each, or tick "
                           "“not for players” on them")  # fmt: skip


def warnings(env: EnvironmentSpec, info: dict[str, Any], sp: dict[str, Any]) -> list[Problem]:
    """Speed off 1×, default controls that do nothing here."""
    found: list[Problem] = []
    speed_warning = _speed_warning(sp)
    if speed_warning:
        found.append(speed_warning)
    controls = info.get("controls") or {}
    unused = controls.get("unused") or {}
    if unused:
        pairs = _listing([f"{name} → {value}" for name, value in unused.items()])
        message = f"default controls bound to actions this environment lacks: {pairs}"
        found.append((("controls",), message))
    return found


def replay_warning(replay: dict[str, Any] | None) -> Problem | None:
    """An environment that does not replay: its episodes could never be verified."""
    if not replay or replay.get("replays") is not False:
        return None
    if replay.get("declared"):
        why = "it declares that it is not deterministic"
    elif replay.get("error"):
        why = str(replay["error"])
    else:
        where = (replay.get("difference") or {}).get("message")
        why = f"run twice from the same seed and actions, it differed at {where}"
    message = (f"does not replay: {why}; its episodes will not verify (they are marked "
               "diverged or not replayable), so they cannot be re-simulated")  # fmt: skip
    return (("source",), message)


def _report(env: EnvironmentSpec, inspection: Inspection, key: str) -> dict[str, Any]:
    info = inspection.info or {}
    sp = speed(env, info) if info else None
    unbound = unbound_problem(env, info) if info else None
    replay = replay_warning(inspection.replay)
    found = _items(warnings(env, info, sp)) if sp else []
    if replay and sp:  # the checklist's item about it says how to fix it
        found.append({"loc": list(replay[0]), "msg": replay[1], "code": "not_replayable"})
    return {
        "problems": _items([*inspection.problems, *([unbound] if unbound else [])]),
        "warnings": found,
        "observation_space": info.get("observation_spec"),
        "action_space": info.get("action_spec"),
        "action_meanings": info.get("action_meanings"),
        "cameras": info.get("cameras"),
        "controls": info.get("controls"),
        "speed": sp,
        "frame_url": frame_url(key) if inspection.frame else None,
        "policy": inspection.policy,
        "replay": inspection.replay,
    }


def _empty(problems: list[Problem]) -> dict[str, Any]:
    return {
        "problems": _items(problems), "warnings": [], "observation_space": None,
        "action_space": None, "action_meanings": None, "cameras": None, "controls": None,
        "speed": None, "frame_url": None, "policy": None, "replay": None,
    }  # fmt: skip


def validate_environments(
    envs: list[EnvironmentSpec],
    settings: Settings,
    allowed: AllowedEnvironments,
    budget: ProcessBudget | None = None,
) -> list[dict[str, Any]]:
    """A report per environment (locs relative to the environment), ``cached`` when served
    from the cache. Builds draw their workers from ``budget`` (503 past it; no limit without
    one: the CLI). Blocks while workers build: call it off the event loop."""
    from server.runtime.catalog import validate_environment
    from server.runtime.probe import PARALLEL, inspect_all

    reports: list[dict[str, Any] | None] = [None] * len(envs)
    to_build: list[tuple[int, str, list[Problem]]] = []
    for index, env in enumerate(envs):
        found = validate_environment(env, allowed)
        # Build it unless it may not be built (or its settings are already known bad); an
        # env without controls is still built: an unknown id is the first thing to fix.
        if not all(loc == ("controls",) for loc, _ in found):
            reports[index] = {**_empty(found), "cached": False}
            continue
        key = cache_key(env, allowed)
        cached = None if found else _cached(settings.data_root, key)
        if cached is not None:
            reports[index] = {**cached, "cached": True}
        else:
            to_build.append((index, key, found))
    if to_build:
        wanted = min(PARALLEL, len(to_build))
        with budget.slots(wanted) if budget else nullcontext(wanted) as parallel:
            inspections = inspect_all(
                [envs[index] for index, _, _ in to_build], allowed,
                data_root=settings.data_root, timeout=settings.worker_start_timeout_s,
                parallel=parallel,
            )  # fmt: skip
        for (index, key, found), inspection in zip(to_build, inspections, strict=True):
            inspection.problems[:0] = found
            report = _report(envs[index], inspection, key)
            if inspection.info is not None and not inspection.transient and not found:
                if inspection.frame:
                    _write(cache_dir(settings.data_root) / f"{key}.jpg", inspection.frame)
                _write(cache_dir(settings.data_root) / f"{key}.json", json.dumps(report).encode())
                prune_cache(settings.data_root, settings.validation_cache_max)
            reports[index] = {**report, "cached": False}
    return [r for r in reports if r is not None]


def validate_study(
    spec: StudySpec,
    settings: Settings,
    allowed: AllowedEnvironments,
    prefix: Loc = (),
    budget: ProcessBudget | None = None,
) -> list[dict[str, Any]]:
    """:func:`validate_environments` for a study, field paths from ``prefix`` + the root."""
    from server.runtime.catalog import default_controls

    reports = validate_environments(spec.environments, settings, allowed, budget)
    out = []
    for index, (env, report) in enumerate(zip(spec.environments, reports, strict=True)):
        base = [*prefix, "environments", index]
        out.append({
            "index": index, "id": env.id, "name": env.name, **report,
            "ok": not report["problems"],
            "default_controls": default_controls(env.source).model_dump(mode="json"),
            "problems": [{**p, "loc": [*base, *p["loc"]]} for p in report["problems"]],
            "warnings": [{**w, "loc": [*base, *w["loc"]]} for w in report["warnings"]],
        })  # fmt: skip
    return out


def catalog_spec(entry: CatalogEntry) -> EnvironmentSpec:
    """The environment spec a catalog entry's thumbnail (its first frame) is built from."""
    return EnvironmentSpec(
        id="thumbnail", name=entry.key, source=entry.source(), mode=entry.mode, fps=entry.fps
    )


def catalog_replays(settings: Settings, allowed: AllowedEnvironments) -> dict[str, bool | None]:
    """Catalog key -> whether its defaults replay, from the validation cache (entries not
    built yet are left out)."""
    from server.runtime.catalog import CATALOG

    found: dict[str, bool | None] = {}
    for key, entry in CATALOG.items():
        report = _cached(settings.data_root, cache_key(catalog_spec(entry), allowed), touch=False)
        if report is not None:
            found[key] = (report.get("replay") or {}).get("replays")
    return found


def warm_catalog(
    settings: Settings, allowed: AllowedEnvironments, stop: Event, tried: set[str] | None = None
) -> int:
    """Build the first frame of each installed catalog entry not cached yet, one at a time
    until ``stop`` is set; how many were built. Blocks: run it in a thread.

    ``tried`` (kept by the caller between passes) holds the entries already built or tried:
    one whose build failed is not tried again by the next pass (its thumbnail request builds
    it, and says why it cannot)."""
    from server.runtime.catalog import CATALOG

    built = 0
    for entry in CATALOG.values():
        if stop.is_set():
            break
        if not entry.installed():
            continue
        spec = catalog_spec(entry)
        key = cache_key(spec, allowed)
        if tried is not None and key in tried:
            continue
        if frame_path(settings.data_root, key) is None:
            validate_environments([spec], settings, allowed)
            built += 1
        if tried is not None:
            tried.add(key)
    return built
