"""The pre-launch checklist's items: their shape and the form's label of each field.

Each item is ``{level, code, message, fix, field, label, loc, msg}`` (see
:mod:`server.services.studies.launch_check`).
"""

from __future__ import annotations

from typing import Any

Loc = tuple[str | int, ...]
Item = dict[str, Any]

# The form's labels (web/editor: fields of the study, the crowd settings, each environment).
STUDY_LABELS = {
    "name": "Study name", "description": "Description", "instructions": "Study instructions",
    "pause_timeout_s": "Pause timeout (s)", "crowd.consent": "Consent text",
    "crowd.assignment": "Assignment", "crowd.allow_anonymous": "Allow anonymous participants",
    "crowd.completion_code": "Completion code", "crowd.screenout_code": "Screen-out code",
    "crowd.completion_url": "Completion URL", "crowd.screenout_url": "Screen-out URL",
    "crowd.full_code": "Study-full code", "crowd.full_url": "Study-full URL",
    "crowd.requirements.min_episodes": "Required episodes",
    "crowd.requirements.min_play_time_s": "Required play time (s)",
    "crowd.inputs": "Participants play with", "crowd.platforms": "Participants come from",
    "narrate_episodes": "Ask participants to narrate their episodes",
    "kind": "What participants do", "feedback.source.studies": "Source studies",
    "feedback.source.environments": "Environments to judge", "feedback.source.task": "Task",
    "feedback.source.statuses": "Episode statuses", "feedback.source.outcomes": "Outcomes",
    "feedback.source.tags": "With tags", "feedback.source.exclude_tags": "Without tags",
    "feedback.clip_steps": "Steps per clip", "feedback.view": "The clips show",
    "feedback.fps": "Playback speed (frames/s)", "feedback.questions": "Questions",
    "feedback.pairing": "Which items next", "feedback.judgements_per_item": "Judges per item",
    "feedback.judgements_per_participant": "Judgements per participant",
    "feedback.judgements_total": "Judgements in total",
    "feedback.min_watch_s": "Minimum watch time (s)", "feedback.gold": "Gold items",
    "feedback.gold_rate": "Share of gold items",
    "feedback.gold_min_accuracy": "Minimum gold accuracy",
    "feedback.gold_min_answers": "Gold answers before screening",
}  # fmt: skip
ENV_LABELS = {
    "name": "Display name", "id": "Id (in exports)", "mode": "Play mode",
    "fps": "Steps per second (async)", "allow_end": "Participants may end an episode",
    "countdown_s": "Countdown (s, async)",
    "step_on_input": "Step on input (async)", "speed": "Speed (async)",
    "speed_choices": "Speeds players may choose (async)", "max_steps": "Max steps",
    "max_duration_s": "Max duration (s)", "image_quality": "Image quality",
    "adaptive_quality": "Adapt quality to the player's link",
    "min_stream_fps": "Fewest frames/s to stream (adaptive)", "camera": "Camera",
    "seeds": "Seeds", "episodes_per_participant": "Episodes per participant",
    "episodes_total": "Episodes in total", "instructions": "Instructions",
    "controls": "Controls", "source": "Source", "source.id": "Source",
    "source.factory": "Source", "source.kwargs": "Settings", "policy": "Policy",
    "policy.id": "Policy", "tasks": "Tasks", "task_order": "Task order",
}  # fmt: skip


def label_of(loc: Loc) -> str:
    """The form's label for a spec path (the longest known prefix; a setting by its name)."""
    parts = [str(p) for p in loc]
    if len(parts) >= 2 and parts[0] == "environments":
        rest = parts[2:]
        if len(rest) >= 3 and rest[:2] == ["source", "kwargs"]:
            return rest[2]  # a setting is labelled with its own name
        labels, key = ENV_LABELS, rest
    else:
        labels, key = STUDY_LABELS, parts
    for end in range(len(key), 0, -1):
        label = labels.get(".".join(key[:end]))
        if label is not None:
            return label
    return ".".join(parts)


def item(level: str, code: str, loc: Loc, message: str, fix: str = "") -> Item:
    """One checklist item (see the module doc)."""
    return {
        "level": level, "code": code, "message": message, "fix": fix,
        "field": ".".join(str(p) for p in loc), "label": label_of(loc),
        "loc": ["spec", *loc], "msg": message,
    }  # fmt: skip
