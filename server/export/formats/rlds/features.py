"""TFDS features of an export, derived from the environment's dm_env specs.

Layout follows ``tensorflow_datasets/rlds/rlds_base.py`` (``build_info``): a ``steps`` Dataset
with ``observation``, ``action``, ``reward``, ``discount``, ``is_first``, ``is_last``,
``is_terminal`` and the step metadata, beside the episode metadata fields.

Spec mapping: an array spec becomes a Tensor of its shape and dtype (a Scalar when it has no
shape); a ``DiscreteArray`` an int64 scalar; a dict a nested FeaturesDict; a uint8 H x W x C
array (C = 1, 3 or 4) an Image stored as PNG. Rewards and discounts keep their spec's dtype
(float64 for dm_env's Python floats, as in TFDS's own RLDS datasets). float64 values are stored
as raw bytes so that they stay exact (a plain TFDS float64 feature goes through float32).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import tensorflow_datasets as tfds
from dm_env import specs as dm_specs

from server.export.episode import EnvSpecs
from server.export.errors import ExportError
from server.export.fields import (
    ENDING_FIELDS,
    EPISODE_TEXT_FIELDS,
    NARRATION_FIELD,
    OUTCOME_FIELDS,
    REPLAY_STEP_FIELD,
    REPLAY_TEXT_FIELDS,
    TASK_FIELDS,
    is_image_spec,
    tag_field,
)
from server.export.judgements import JUDGED_FIELD, JUDGEMENT_COUNT_FIELDS, JUDGEMENT_MEAN_FIELD
from server.export.timings import TIMING_FLOAT_KEYS, TIMING_KEYS

tfds_features = tfds.features


def float64_tensor(shape: tuple[int, ...] = ()) -> Any:
    """An exact float64 feature: tf.train.Example only has float32 lists, so TFDS would round
    float64 values to float32; raw bytes keep them exact (read with tf.io.decode_raw)."""
    return tfds_features.Tensor(
        shape=shape, dtype=np.float64, encoding=tfds_features.Encoding.BYTES
    )


def spec_to_feature(spec: Any, path: str = "") -> Any:
    """The TFDS feature holding values of a (nested) dm_env spec."""
    if isinstance(spec, dict):
        return tfds_features.FeaturesDict(
            {str(k): spec_to_feature(s, f"{path}/{k}") for k, s in spec.items()}
        )
    if isinstance(spec, list | tuple):
        raise ExportError(f"tuple spaces are not supported ({path or 'root'}); use a Dict space")
    if not isinstance(spec, dm_specs.Array):
        raise ExportError(f"unsupported spec at {path or 'root'}: {spec!r}")
    if isinstance(spec, dm_specs.DiscreteArray):
        return tfds_features.Scalar(dtype=np.int64)
    dtype = np.dtype(spec.dtype)
    if dtype.kind in "OUS":
        return tfds_features.Text()
    if is_image_spec(spec):
        return tfds_features.Image(shape=tuple(spec.shape), dtype=np.uint8, encoding_format="png")
    if dtype == np.float64:
        return float64_tensor(tuple(spec.shape))
    if tuple(spec.shape) == ():
        return tfds_features.Scalar(dtype=dtype)
    return tfds_features.Tensor(shape=tuple(spec.shape), dtype=dtype)


def step_features(
    env_specs: EnvSpecs, *, keep_step_metadata: bool, step_tag_names: Iterable[str]
) -> dict[str, Any]:
    """The features of one RLDS step."""
    step: dict[str, Any] = {
        "observation": spec_to_feature(env_specs.observation, "observation"),
        "action": spec_to_feature(env_specs.action, "action"),
        "reward": spec_to_feature(env_specs.reward, "reward"),
        "discount": spec_to_feature(env_specs.discount, "discount"),
        "is_first": np.bool_,
        "is_last": np.bool_,
        "is_terminal": np.bool_,
    }
    if keep_step_metadata:
        step["frame"] = tfds_features.Image(shape=(None, None, 3), encoding_format="jpeg")
        step["input"] = tfds_features.Text()
        step["timing"] = tfds_features.FeaturesDict(
            {
                **dict.fromkeys(TIMING_KEYS, np.int64),
                **{key: float64_tensor() for key in TIMING_FLOAT_KEYS},
            }
        )
        step["info"] = tfds_features.Text()
        step["control"] = control_features(env_specs)
        # the camera the frame was rendered from ("" for an environment with one)
        step["camera"] = tfds_features.Text()
    for name in sorted(set(step_tag_names)):
        step[tag_field(name)] = np.bool_
    # the narrations covering the step ("" none; server/export/narration.py), always there:
    # one FeaturesDict for every episode of a dataset
    step[NARRATION_FIELD] = tfds_features.Text()
    return step


def control_features(env_specs: EnvSpecs) -> Any:
    """Shared autonomy per step: ``source`` (int8: 0 the player, 1 the policy), the player's
    mapped action, the policy's proposal (zeros where there was none) and whether there was."""
    return tfds_features.FeaturesDict(
        {
            "source": tfds_features.Scalar(dtype=np.int8),
            "human_action": spec_to_feature(env_specs.action, "control/human_action"),
            "policy_action": spec_to_feature(env_specs.action, "control/policy_action"),
            "has_policy_action": np.bool_,
        }
    )


def episode_fields() -> dict[str, Any]:
    """The features of an episode's metadata fields."""
    return {
        **{name: tfds_features.Text() for name in EPISODE_TEXT_FIELDS},
        "seed": np.int64,
        "tags": tfds_features.Sequence(tfds_features.Text()),
        "notes": tfds_features.Text(),
        **{name: tfds_features.Text() for name in OUTCOME_FIELDS},
        **{name: tfds_features.Text() for name in REPLAY_TEXT_FIELDS},
        REPLAY_STEP_FIELD: np.int64,
        **{name: tfds_features.Text() for name in TASK_FIELDS},  # "" when none
        **{name: tfds_features.Text() for name in ENDING_FIELDS},  # how it ended
        # feedback studies' judgements (server/export/judgements.py; zeros: never judged)
        JUDGED_FIELD: np.bool_,
        **dict.fromkeys(JUDGEMENT_COUNT_FIELDS, np.int64),
        JUDGEMENT_MEAN_FIELD: float64_tensor(),
    }


def episode_features(
    env_specs: EnvSpecs, *, keep_step_metadata: bool, step_tag_names: Iterable[str]
) -> Any:
    """The FeaturesDict of one exported episode: its steps and its metadata."""
    step = step_features(
        env_specs, keep_step_metadata=keep_step_metadata, step_tag_names=step_tag_names
    )
    return tfds_features.FeaturesDict({"steps": tfds_features.Dataset(step), **episode_fields()})
