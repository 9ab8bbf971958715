"""What every format names alike: the step tag fields, the step metadata and episode fields,
and the checks on specs that do not depend on a format (an image, a signature of the spaces)."""

from __future__ import annotations

from typing import Any

import numpy as np
from dm_env import specs as dm_specs

from server.export.episode import EnvSpecs

TAG_PREFIX = "tag:"
STEP_METADATA_FIELDS = ("frame", "input", "timing", "info", "control", "camera")
EPISODE_TEXT_FIELDS = ("episode_id", "agent_id", "study_id", "env_id", "env_config", "status")
# "success", "failure" or "" (unset): effective (the reviewer's, else the player's), and each
OUTCOME_FIELDS = ("outcome", "player_outcome", "reviewer_outcome")
# the replay check's verdict and what it found (text), and the RLDS step where (int, -1: none)
REPLAY_TEXT_FIELDS = ("replay_verdict", "replay_message")
REPLAY_STEP_FIELD = "replay_step"
# the task the episode drew ("" none) and its language instruction (the task's, else the
# environment's; "" none), text in every format; the narration covering each step (text)
TASK_FIELDS = ("task_id", "language_instruction")
# how the episode ended (text in every format): ``ended_by`` - environment, time_limit,
# participant, canceled, abandoned, failed, or end_tag (an export's end tag cut it); "" where
# the app never said (an episode from before it did) - and ``env_outcome``, what the
# environment reported of success at its last step: "success", "failure" or "" (none)
ENDING_FIELDS = ("ended_by", "env_outcome")
ENDED_BY_TAG = "end_tag"
ENDED_BY_TRIM = "trim"  # a dataset's trim dropped its last steps
ENDING_TEXT = (
    "`ended_by` (environment, time_limit, participant, canceled, abandoned, failed, "
    "end_tag, or trim: a dataset edit dropped its last steps) and `env_outcome` (success "
    'or failure as the environment reported it; "": none)'
)
NARRATION_FIELD = "narration"


def is_image_spec(spec: Any) -> bool:
    """Whether an array spec is an image: uint8, H x W x C with C in 1, 3 or 4."""
    shape = tuple(spec.shape)
    return (
        np.dtype(spec.dtype) == np.uint8
        and len(shape) == 3
        and shape[2] in (1, 3, 4)
        and shape[0] > 1
        and shape[1] > 1
    )


def tag_field(name: str) -> str:
    """The boolean step field of a step tag."""
    return f"{TAG_PREFIX}{name}"


def specs_signature(env_specs: EnvSpecs) -> Any:
    """A comparable description of the specs' structure, shapes and dtypes (not bounds)."""

    def sig(spec: Any) -> Any:
        if isinstance(spec, dict):
            return tuple(sorted((str(k), sig(s)) for k, s in spec.items()))
        if isinstance(spec, list | tuple):
            return ("tuple", tuple(sig(s) for s in spec))
        kind = "discrete" if isinstance(spec, dm_specs.DiscreteArray) else "array"
        return (kind, tuple(spec.shape), str(np.dtype(spec.dtype)))

    return tuple(
        sig(s)
        for s in (env_specs.observation, env_specs.action, env_specs.reward, env_specs.discount)
    )
