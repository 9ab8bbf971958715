"""Run in a runtime's interpreter by :func:`server.runtime.runtimes.check`: what it holds.

Prints one JSON line: its Python version, the versions of the packages asked about (None
when missing), the suite modules that cannot be found (looked up, not imported) and whether
the app's worker code imports there (the error when not). Imports no suite.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import metadata


def report(packages: list[str], modules: list[str]) -> dict:
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    try:
        import server.recording.writer  # noqa: F401
        import server.runtime._child_loop  # noqa: F401

        import_error = None
    except Exception as exc:  # reported, not raised: the app decides
        import_error = f"{type(exc).__name__}: {exc}"
    return {
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "packages": versions,
        "missing": missing,
        "import_error": import_error,
    }


if __name__ == "__main__":
    asked = json.loads(sys.argv[1])
    print(json.dumps(report(asked["packages"], asked["modules"])), flush=True)
