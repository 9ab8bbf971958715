"""The shared-autonomy policies designers may name, as the study editor lists them.

Only what the operator allows (:class:`~server.runtime.allowlist.AllowedEnvironments`: the
``rlds_studio.policies`` entry points and ``STUDIO_POLICIES``), and nothing is imported: a
policy's description is the first paragraph of its factory's docstring, read from the
module's source file (found on ``sys.path`` and parsed, never run).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from server.runtime.allowlist import POLICY_GROUP, AllowedEnvironments

MAX_SOURCE_BYTES = 1024 * 1024  # a factory's module larger than this is not read
MAX_DESCRIPTION = 300


@dataclass(frozen=True)
class PolicyInfo:
    """One policy as the editor offers it."""

    id: str
    description: str | None
    origin: str  # "package <name>" (an entry point) or "STUDIO_POLICIES"


def _module_file(module: str) -> Path | None:
    """The source file of ``module`` on ``sys.path`` (no parent package is imported)."""
    parts = module.split(".")
    for root in sys.path:
        base = Path(root or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            try:
                if candidate.is_file():
                    return candidate
            except OSError:
                continue
    return None


@lru_cache(maxsize=256)
def factory_description(target: str) -> str | None:
    """The first paragraph of ``module:function``'s docstring, one line (None: none found)."""
    module, _, name = target.partition(":")
    path = _module_file(module)
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return None
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                doc = ast.get_docstring(node) or ""
                text = " ".join(doc.split("\n\n")[0].split())
                return text[:MAX_DESCRIPTION] or None
    return None


def installed_policies(allowed: AllowedEnvironments, listed: list[str]) -> list[PolicyInfo]:
    """The policies ``allowed`` names, sorted by id; ``listed``: the ``STUDIO_POLICIES``
    pairs (their ids override an entry point's)."""
    from_settings = {pair.partition("=")[0] for pair in listed}
    packages = {
        ep.name: (ep.dist.name if ep.dist is not None else "?")
        for ep in metadata.entry_points(group=POLICY_GROUP)
    }
    return [
        PolicyInfo(
            id=policy_id,
            description=factory_description(target),
            origin="STUDIO_POLICIES"
            if policy_id in from_settings
            else f"package {packages.get(policy_id, '?')}",
        )  # fmt: skip
        for policy_id, target in allowed.policies
    ]
