"""The environments the operator allows designers to choose (pure checks, no imports).

A study source is allowed when it is:

- a catalog entry (:mod:`server.runtime.catalog`);
- a Gymnasium id registered by one of the packages listed in ``STUDIO_GYM_PACKAGES``
  (checked in the worker, which imports only those packages: see
  :func:`server.runtime.registration.ensure_registered`); ids of the ``module:Env`` form are
  refused, since ``gymnasium.make`` imports ``module`` for them;
- a dm_env factory listed in ``STUDIO_DM_ENV_FACTORIES`` or registered by an installed
  package under the :data:`ENTRY_POINT_GROUP` entry-point group.

A shared-autonomy policy id is allowed when an installed package registers it under the
:data:`POLICY_GROUP` entry-point group or the operator lists it in ``STUDIO_POLICIES``
(``id=module:function``); the designer names only the id.

:class:`AllowedEnvironments` is built from the settings in the app and handed to the worker,
so the worker checks the same list before it imports anything.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from server.runtime.catalog import CATALOG
from server.study_spec import DmEnvSource, GymnasiumSource, PolicySpec

if TYPE_CHECKING:
    from server.core.config import Settings

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rlds_studio.environments"
POLICY_GROUP = "rlds_studio.policies"
_FACTORY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]  # (field path inside the environment spec, message)


def entry_point_factories(group: str = ENTRY_POINT_GROUP) -> dict[str, str]:
    """Entry points of ``group``: name → ``module:function`` (not imported)."""
    found: dict[str, str] = {}
    for ep in metadata.entry_points(group=group):
        if _FACTORY.match(ep.value):
            found[ep.name] = ep.value
        else:
            log.warning("entry point %s = %r is not 'module:function': ignored", ep.name, ep.value)
    return found


@dataclass(frozen=True)
class AllowedEnvironments:
    """What designers may choose besides the catalog (picklable: it goes to the worker)."""

    gym_packages: tuple[str, ...]
    dm_env_factories: frozenset[str]
    # shared-autonomy policies: (id, "module:function") pairs, and a step's time budget
    policies: tuple[tuple[str, str], ...] = ()
    policy_budget_ms: float = 20.0
    # a person's step draws only the view shown (server/recording/deferred.py)
    defer_images: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> AllowedEnvironments:
        """The settings' lists, the catalog's factories and the installed entry points."""
        return cls.of(
            settings.gym_packages, settings.dm_env_factories, settings.policies,
            policy_budget_ms=settings.policy_step_budget_ms,
            # only where the replay checks that draw them run (else never exportable)
            defer_images=settings.defer_observation_images and settings.replay_check_workers > 0,
        )  # fmt: skip

    @classmethod
    def of(
        cls, gym_packages: Iterable[str] = (), factories: Iterable[str] = (),
        policies: Iterable[str] = (), *, policy_budget_ms: float = 20.0,
        defer_images: bool = True,
    ) -> AllowedEnvironments:  # fmt: skip
        """These packages, factories and policies (``id=module:function``), plus the
        catalog's factories and the entry points."""
        catalog = {e.factory for e in CATALOG.values() if e.factory is not None}
        plugged = set(entry_point_factories().values())
        found = entry_point_factories(POLICY_GROUP)
        for pair in policies:
            policy_id, _, target = pair.partition("=")
            found[policy_id] = target
        return cls(
            tuple(gym_packages), frozenset(catalog | set(factories) | plugged),
            tuple(sorted(found.items())), policy_budget_ms, defer_images,
        )  # fmt: skip

    def policy_target(self, policy_id: str) -> str | None:
        """The ``module:function`` building an allowed policy (None: not allowed)."""
        return dict(self.policies).get(policy_id)

    def policy_problems(self, policy: PolicySpec | None) -> list[Problem]:
        """Why a study's policy is not allowed here (nothing is imported)."""
        if policy is None or self.policy_target(policy.id) is not None:
            return []
        known = ", ".join(pid for pid, _ in self.policies) or "none"
        return [(("policy", "id"), f"policy {policy.id!r} is not installed on this server "
                 f"(allowed: {known}); ask the operator to install it (entry-point group "
                 f"{POLICY_GROUP!r}) or list it in STUDIO_POLICIES")]  # fmt: skip

    def source_problems(self, source: GymnasiumSource | DmEnvSource) -> list[Problem]:
        """Why ``source`` is not allowed, as far as can be told without importing anything."""
        if isinstance(source, GymnasiumSource):
            if ":" in source.id:
                return [(("source", "id"), _COLON)]
            return []
        if source.factory not in self.dm_env_factories:
            return [(("source", "factory"), _not_allowed(source.factory))]
        return []


_COLON = (
    "Gymnasium ids of the form 'module:Env' are not allowed (they import a module); use an "
    "id registered by a package the operator allows (STUDIO_GYM_PACKAGES)"
)


def _not_allowed(factory: str) -> str:
    return (
        f"dm_env factory {factory!r} is not allowed on this server; choose a catalog "
        "environment, or ask the operator to allow it (STUDIO_DM_ENV_FACTORIES, or a package "
        f"registering it under the {ENTRY_POINT_GROUP!r} entry-point group)"
    )


class NotAllowed(RuntimeError):
    """A source the operator did not allow (raised in the worker before any import)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(msg for _, msg in problems))
        self.problems = problems
