"""docs/architecture.md names only files and folders that exist, and every server package."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"


def _paths() -> set[str]:
    names = re.findall(r"`([\w./-]+)`", DOC.read_text(encoding="utf-8"))
    tops = ("server/", "web/", "docs/", "tests/", "alembic/", "benchmarks/", "studies/")
    return {n for n in names if n.startswith(tops)}  # others are relative (``routes/``)


def test_every_path_it_names_exists():
    paths = _paths()
    assert len(paths) > 40  # the doc names files, not only packages
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert missing == []


def test_it_describes_every_server_package():
    text = DOC.read_text(encoding="utf-8")
    packages = sorted(p.name for p in (ROOT / "server").iterdir() if (p / "__init__.py").exists())
    assert [p for p in packages if f"server/{p}/" not in text] == []
