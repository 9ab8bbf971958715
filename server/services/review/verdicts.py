"""An episode's replay verdict as the review shows it, in the replay's own step numbers.

The checker (:mod:`server.services.jobs.replay_checks`, :mod:`server.runtime.replay_check`)
counts the log's dm_env timesteps: timestep t holds o_t and the reward and discount that
action a_{t-1} earned. The replay, the step tags and every export count RLDS steps, where
step t holds o_t, a_t and what a_t earned (:mod:`server.export.episode`). So a reward or a
discount that differs at timestep t is the one of step t - 1 (the step whose action earned it),
an action the environment raised at is that step's too, and an observation or an episode's
end at timestep t is step t's. The API gives the RLDS step: "Jump to step N" opens the step
where the reviewer sees the two values differ. Nothing here changes the stored verdict.
"""

from __future__ import annotations

from typing import Any

from server.models import Episode, ReplayVerdict
from server.runtime.replay_check import describe

EARNED = ("reward", "discount")  # recorded with the timestep after the action that earned it


def replay_step(difference: dict[str, Any] | None, step: int | None) -> int | None:
    """The RLDS step of a difference (or of the checker's ``replay_step``)."""
    if difference is not None:
        earned = str(difference.get("field")) in EARNED
        return max(0, int(difference["step"]) - 1) if earned else int(difference["step"])
    # not replayable: the environment raised stepping with the action of step - 1
    return None if step is None else max(0, step - 1)


def verdict(episode: Episode) -> dict[str, Any]:
    """``replay_verdict``, ``replay_step`` (RLDS), ``replay_message``, ``replay_reason`` and
    ``replay_difference`` (its step and message in RLDS steps too) of an episode."""
    detail = episode.replay_detail or {}
    difference = detail.get("difference")
    if episode.replay_verdict != ReplayVerdict.diverged or not isinstance(difference, dict):
        difference = None
    step = replay_step(difference, episode.replay_step)
    message = detail.get("message")
    if difference is not None and step is not None:
        difference = {**difference, "step": step}
        difference["message"] = message = describe(difference)
    return {
        "replay_verdict": episode.replay_verdict,
        "replay_step": step,
        "replay_message": message,
        "replay_reason": detail.get("reason"),
        "replay_difference": difference,
    }
