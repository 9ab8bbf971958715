"""The envlogger output format: each selected episode's Riegeli log, copied as recorded.

Layout: ``<out>/episodes/<episode_id>/`` holds the log files (readable with
``envlogger.Reader``) and ``tags.json`` with the episode's database-side metadata.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from server.export.tags import StepTag

EPISODES_SUBDIR = "episodes"
TAGS_FILE = "tags.json"


def tags_document(
    *,
    episode_id: str,
    agent_id: str,
    status: str,
    tags: Sequence[str],
    step_tags: Sequence[StepTag],
    notes: str,
    outcomes: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The content of an episode's ``tags.json`` (step ranges are inclusive step indices)."""
    return {
        "episode_id": episode_id,
        "agent_id": agent_id,
        "status": status,
        "tags": list(tags),
        "step_tags": [{"name": t.name, "start": t.start, "end": t.end} for t in step_tags],
        "notes": notes,
        **(outcomes or {}),
    }


def copy_episode_log(log_dir: Path, out_root: Path, episode_id: str, doc: dict[str, Any]) -> Path:
    """Copy one episode's log folder under ``out_root`` and write its ``tags.json``."""
    dest = Path(out_root) / EPISODES_SUBDIR / episode_id
    shutil.copytree(log_dir, dest)
    (dest / TAGS_FILE).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return dest
