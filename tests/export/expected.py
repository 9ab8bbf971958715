"""What an export must hold, computed from recordings' ground truth (not from the exporter).

Expected episodes are flat dicts ``{"steps/observation/image": array, "episode_id": "e1", ...}``
saved to a ``.npz`` (arrays, no pickles: the consumer venv runs numpy 1.26) that
``consumer_check.py`` compares with what TensorFlow reads back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from server.export.fields import OUTCOME_FIELDS
from server.export.judgements import JudgementSummary
from server.export.tags import TaggedSpan
from server.models import ReplayVerdict
from server.runtime.replay_check import Difference
from tests.export.recordings import Recording

# Replay verdicts as the checker stores them on an episode's row (server/services/jobs/
# replay_checks.py): a reward that differed at the log's timestep 3, and a verified replay.
DIFFERENCE = Difference(step=3, field="reward", recorded="1.0", replayed="2.0", amount=1.0)
VERDICT_ROWS: dict[str, dict[str, Any]] = {
    "diverged": {
        "replay_verdict": ReplayVerdict.diverged,
        "replay_step": 3,
        "replay_detail": {
            "message": DIFFERENCE.public()["message"],
            "difference": DIFFERENCE.public(),
            "steps": 3,
        },
    },
    "verified": {
        "replay_verdict": ReplayVerdict.verified,
        "replay_step": None,
        "replay_detail": {"steps": 9, "seconds": 0.2},
    },
}
# ... and what every export must say of them: the reward of timestep 3 is RLDS step 2's
EXPORTED_VERDICTS: dict[str, dict[str, Any]] = {
    "diverged": {
        "replay_verdict": "diverged",
        "replay_step": 2,
        "replay_message": "step 2, reward: recorded 1.0, replayed 2.0 (by 1)",
    },
    "verified": {"replay_verdict": "verified", "replay_step": -1, "replay_message": ""},
}


def _flat(prefix: str, values: list[Any]) -> dict[str, np.ndarray]:
    first = values[0]
    if isinstance(first, dict):
        out: dict[str, np.ndarray] = {}
        for key in first:
            out.update(_flat(f"{prefix}/{key}", [v[key] for v in values]))
        return out
    return {prefix: np.stack([np.asarray(v) for v in values])}


def expected_episode(
    rec: Recording,
    *,
    agent_id: str = "agent-x",
    status: str = "completed",
    tags: Sequence[str] = (),
    notes: str = "",
    outcomes: dict[str, str] | None = None,
    replay: dict[str, Any] | None = None,
    step_tags: Sequence[TaggedSpan] = (),
    tag_names: Iterable[str] = (),
    end_tags: Iterable[str] = (),
    keep_step_metadata: bool = True,
    task_id: str = "",
    instruction: str = "",
    narrated: Iterable[tuple[int, int, str]] = (),
    judgements: JudgementSummary | None = None,
    ended_by: str = "",
    env_outcome: str = "",
) -> dict[str, Any]:
    """The flat expected content of one exported episode (``replay``: its replay fields;
    None: pending, never checked; ``narrated``: (first step, last step, text) the steps'
    narrations, listed in the order they must be joined; ``judgements``: the summary of its
    judgements, None: never judged; ``ended_by``, ``env_outcome``: how the app says it ended,
    "" unknown - an end tag's cut says ``end_tag`` and no outcome)."""
    n = rec.num_steps
    ends = [t.start for t in step_tags if t.name in set(end_tags)]
    last = min(ends) if ends else n - 1
    terminal = rec.terminated and last == n - 1
    zero_action = np.zeros_like(np.asarray(rec.actions[0])) if rec.actions else None
    actions = [rec.actions[t] if t < last else zero_action for t in range(last + 1)]
    rewards = [rec.rewards[t] if t < last else 0.0 for t in range(last + 1)]
    discounts = [
        0.0 if t == last else (0.0 if rec.terminated and t == n - 2 else 1.0)
        for t in range(last + 1)
    ]
    steps: dict[str, Any] = {}
    steps.update(_flat("steps/observation", rec.observations[: last + 1]))
    steps.update(_flat("steps/action", actions))
    steps["steps/reward"] = np.asarray(rewards, dtype=np.float64)
    steps["steps/discount"] = np.asarray(discounts, dtype=np.float64)
    steps["steps/is_first"] = np.arange(last + 1) == 0
    steps["steps/is_last"] = np.arange(last + 1) == last
    steps["steps/is_terminal"] = (np.arange(last + 1) == last) & terminal
    if keep_step_metadata:
        steps["steps/frame"] = list(rec.frames[: last + 1])  # JPEG bytes
        steps["steps/info"] = np.asarray(rec.infos[: last + 1])
        inputs = [json.dumps(rec.inputs[t]) if t < last else "null" for t in range(last + 1)]
        steps["steps/input"] = np.asarray(inputs)
        acked = n - 1  # the final frame's ack is never recorded
        timing: dict[str, list[int]] = {}
        for t in range(last + 1):
            action = rec.timings[t + 1] if t < last else {}
            sent, drawn = rec.frame_times[t] if t < acked else (-1, -1)
            next_drawn = rec.frame_times[t + 1][1] if t + 1 < acked else -1
            values = {
                "applied_ms": action.get("applied", -1),
                "frame_drawn_ms": drawn,
                "frame_sent_ms": sent,
                "input_latency_ms": (
                    next_drawn - action["input_sent"]
                    if "input_sent" in action and next_drawn != -1
                    else -1
                ),
                "input_recv_ms": action.get("input_recv", -1),
                "input_sent_ms": action.get("input_sent", -1),
                "seen_step": action.get("seen_step", -1),
                # o_t's own: its frame's stream quality, the speed it was played at
                "jpeg_quality": rec.timings[t].get("jpeg_quality", -1),
            }
            for key, value in values.items():
                timing.setdefault(key, []).append(value)
        for key, value_list in timing.items():
            steps[f"steps/timing/{key}"] = np.asarray(value_list, dtype=np.int64)
        speeds = [rec.timings[t].get("speed", 1.0) for t in range(last + 1)]
        steps["steps/timing/speed"] = np.asarray(speeds, dtype=np.float64)
        steps.update(_control(rec, actions, last))
        # o_t's own: the camera its frame came from ("" where none was recorded)
        cameras = [rec.timings[t].get("camera", "") for t in range(last + 1)]
        steps["steps/camera"] = np.asarray(cameras, dtype=str)
    for name in sorted(set(tag_names)):
        column = np.zeros(n, dtype=bool)
        for tag in step_tags:
            if tag.name == name:
                column[tag.start : tag.end + 1] = True
        steps[f"steps/tag:{name}"] = column[: last + 1]
    texts: list[list[str]] = [[] for _ in range(last + 1)]
    for first, final, text in narrated:
        for t in range(first, min(final, last) + 1):
            texts[t].append(text)
    steps["steps/narration"] = np.asarray([" | ".join(t) for t in texts], dtype=str)
    return {
        **steps,
        "episode_id": rec.episode_id,
        "agent_id": agent_id,
        "study_id": "study-1",
        "env_id": rec.env_id,
        "env_config": json.dumps(rec.env_config, sort_keys=True),
        "seed": np.int64(rec.seed),
        "status": status,
        "tags": np.asarray(list(tags), dtype=str),
        "notes": notes,
        **{k: (outcomes or {}).get(k, "") for k in OUTCOME_FIELDS},
        "replay_verdict": (replay or {}).get("replay_verdict", "pending"),
        "replay_step": np.int64((replay or {}).get("replay_step", -1)),
        "replay_message": (replay or {}).get("replay_message", ""),
        "task_id": task_id,
        "language_instruction": instruction,
        # an end tag cut it (or took a terminal last step's ending away)
        "ended_by": "end_tag" if ends and (last < n - 1 or rec.terminated) else ended_by,
        "env_outcome": "" if ends and (last < n - 1 or rec.terminated) else env_outcome,
        **expected_judgements(judgements),
        "_return": float(sum(rewards)),
        "_length": last + 1,
    }


def expected_judgements(summary: JudgementSummary | None) -> dict[str, Any]:
    """The judgement fields an export must hold for ``summary`` (None: never judged), written
    out from the documented rule (server/export/judgements.py), with their dtypes."""
    s = summary or JudgementSummary()
    return {
        "judged": np.bool_(s.wins + s.losses + s.ties + s.ratings > 0),
        "judgement_wins": np.int64(s.wins),
        "judgement_losses": np.int64(s.losses),
        "judgement_ties": np.int64(s.ties),
        "judgement_ratings": np.int64(s.ratings),
        "judgement_mean_rating": np.float64(0.0 if s.mean_rating is None else s.mean_rating),
    }


def _control(rec: Recording, actions: list[Any], last: int) -> dict[str, np.ndarray]:
    """Shared autonomy per step: what the recording's control records say (without one: the
    player chose every action, the executed one; no proposal), zeros on the last step."""
    zero = np.zeros_like(np.asarray(actions[0]))

    def shape_of(values: list[float]) -> np.ndarray:
        return np.asarray(values, dtype=zero.dtype).reshape(zero.shape)

    sources, human, policy, has = [], [], [], []
    for t in range(last + 1):
        record = rec.controls[t] if t < last and rec.controls else None
        if record is None:
            sources.append(0)
            human.append(actions[t] if t < last else zero)
            policy.append(zero)
            has.append(False)
            continue
        sources.append(1 if record["source"] == "policy" else 0)
        human.append(shape_of(record["human"]))
        policy.append(zero if record["policy"] is None else shape_of(record["policy"]))
        has.append(record["policy"] is not None)
    out = {
        "steps/control/source": np.asarray(sources, dtype=np.int8),
        "steps/control/has_policy_action": np.asarray(has, dtype=bool),
    }
    out.update(_flat("steps/control/human_action", human))
    out.update(_flat("steps/control/policy_action", policy))
    return out


def save_expected(path: Path, episodes: list[dict[str, Any]]) -> None:
    """Save expected episodes as one ``.npz`` (JPEG lists as bytes plus offsets)."""
    arrays: dict[str, np.ndarray] = {}
    for i, episode in enumerate(episodes):
        for key, value in episode.items():
            if isinstance(value, list):  # lists of encoded bytes
                arrays[f"{i}|jpeg|{key}"] = np.frombuffer(b"".join(value), dtype=np.uint8)
                arrays[f"{i}|jpegoff|{key}"] = np.cumsum([0] + [len(v) for v in value])
            else:
                arrays[f"{i}|{key}"] = np.asarray(value)
    np.savez(path, **arrays)
