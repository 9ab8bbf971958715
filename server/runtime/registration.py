"""Which modules register a Gymnasium id, and importing only those the operator trusts
(:func:`ensure_registered`); the errors of building an environment."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

from server.runtime.catalog import is_catalog_id


class EnvBuildError(RuntimeError):
    """The environment could not be built (unknown id, missing suite, bad kwargs)."""


class UnknownEnvironment(EnvBuildError):
    """The Gymnasium id is not registered by the catalog's suites or the allowed packages."""


class BadSettings(EnvBuildError):
    """The environment refused its kwargs."""


def suite_modules(env_id: str) -> list[str]:
    """Modules that register a Gymnasium id's suite (imported before ``gymnasium.make``)."""
    if env_id.startswith("ALE/"):
        return ["ale_py"]
    if env_id.startswith(("MiniGrid-", "BabyAI-")):
        return ["minigrid"]
    if env_id.startswith("MiniHack-"):
        return ["nle", "minihack"]
    if env_id.startswith("NetHack"):
        return ["nle"]
    if env_id.startswith(("Fetch", "HandManipulate", "HandReach", "AdroitHand")):
        return ["gymnasium_robotics"]
    if env_id.startswith("RLDSStudio/"):
        return ["server.envs"]  # the project's own environments
    return []


def register_suites(modules: Iterable[str]) -> None:
    """Import the modules that register a suite's Gymnasium ids (before ``gymnasium.make``)."""
    import gymnasium as gym

    for module in modules:
        mod = import_module(module)
        if module == "ale_py":
            gym.register_envs(mod)  # ale_py registers its ids only when asked


def ensure_registered(env_id: str, packages: Sequence[str]) -> None:
    """Register ``env_id`` by importing only trusted modules, or raise.

    A catalog id: its suite's modules. Any other id: the operator's ``packages`` one by one
    (the one its prefix suggests first) until the id appears, and it must then come from one
    of them (its entry point lives in a listed package). :class:`UnknownEnvironment` else.
    """
    import gymnasium as gym

    if is_catalog_id(env_id):
        register_suites(suite_modules(env_id))
        if env_id not in gym.registry:
            raise UnknownEnvironment(f"unknown Gymnasium environment id {env_id!r}")
        return
    hinted = [m for m in suite_modules(env_id) if m in packages]
    for package in [*hinted, *(p for p in packages if p not in hinted)]:
        if env_id in gym.registry:
            break
        try:
            register_suites([package])
        except EnvBuildError:
            continue  # a listed package that is not installed registers nothing
    spec = gym.registry.get(env_id)
    if spec is None or not any(lives_in(spec.entry_point, p) for p in packages):
        listed = ", ".join(packages) or "none"
        raise UnknownEnvironment(
            f"unknown Gymnasium environment id {env_id!r}: not in the catalog, nor registered "
            f"by a package the operator allows ({listed})"
        )


def lives_in(entry_point: Any, package: str) -> bool:
    """Whether a registered entry point (``"module:Class"`` or a callable) is in ``package``."""
    if isinstance(entry_point, str):
        module = entry_point.partition(":")[0]
    else:
        module = getattr(entry_point, "__module__", None) or ""
    return module == package or module.startswith(package + ".")


def import_module(module: str) -> Any:
    """``module``, or :class:`EnvBuildError` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EnvBuildError(f"module {module!r} is not installed: {exc}") from exc
