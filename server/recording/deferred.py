"""Observation values left out of a log on the play path, and drawn into it afterwards.

A worker that records a person's episode of an environment able to draw its observation's
images from its recorded state (``defer_images``: Robosuite's tasks, whose ``sim_state`` is
in every step) leaves those images out of the step (zeros of their shape) and notes their
keys in the log's folder (:func:`mark`) before the first step is recorded. The note stays
until the complete log, the images drawn from each step's state
(:mod:`server.runtime.completion`), has taken the log's place: until then the episode is
not exportable (:func:`pending` is what exports and replays ask).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from server.recording.format import deferred_path

SOURCE = "sim_state"  # the observation key the deferred values are drawn from


def mark(log_dir: Path, keys: Sequence[str]) -> None:
    """Note in ``log_dir`` that its steps hold ``keys`` as placeholders (durable)."""
    path = deferred_path(log_dir)
    text = json.dumps({"keys": list(keys), "from": SOURCE})
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def pending(log_dir: Path) -> list[str]:
    """The observation keys still to be drawn into the log of ``log_dir`` ([]: none)."""
    try:
        note = json.loads(deferred_path(log_dir).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return ["(an unreadable note)"]
    keys = note.get("keys") if isinstance(note, dict) else None
    return [str(k) for k in keys] if isinstance(keys, list) and keys else ["(unnamed)"]
