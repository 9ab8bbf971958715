"""The study file format: a pydantic model validated on import, API writes and activation.

A study spec is what a designer edits and what ``studies/*.yaml`` holds. The JSON Schema
in ``docs/study-schema.json`` is generated from :class:`StudySpec`. One module per part:
``base`` (the strict model, text and JSON checks), ``controls``, ``environments``,
``crowd`` and ``study`` (the root).
"""

from server.study_spec.base import (
    CONTROL_CHARACTER,
    Loc,
    StrictModel,
    bad_char_path,
    char_name,
    control_char_problem,
    json_data_problem,
    nul_path,
    reject_control_chars,
    reject_nul,
)
from server.study_spec.controls import ActionValue, AxisBinding, Controls
from server.study_spec.crowd import (
    CODE,
    MAX_TOUCH_BUTTONS,
    CrowdSettings,
    Input,
    Requirements,
    check_url,
)
from server.study_spec.environments import (
    KWARGS_DESCRIPTION,
    MAX_KWARGS_BYTES,
    MAX_KWARGS_DEPTH,
    MAX_SEED,
    SLUG,
    DmEnvSource,
    EnvironmentSpec,
    GymnasiumSource,
    PolicySpec,
    Source,
    Takeover,
)
from server.study_spec.study import StudySpec

__all__ = [
    "CODE",
    "CONTROL_CHARACTER",
    "KWARGS_DESCRIPTION",
    "MAX_KWARGS_BYTES",
    "MAX_KWARGS_DEPTH",
    "MAX_SEED",
    "MAX_TOUCH_BUTTONS",
    "SLUG",
    "ActionValue",
    "AxisBinding",
    "Controls",
    "CrowdSettings",
    "DmEnvSource",
    "EnvironmentSpec",
    "GymnasiumSource",
    "Input",
    "Loc",
    "PolicySpec",
    "Requirements",
    "Source",
    "StrictModel",
    "StudySpec",
    "Takeover",
    "bad_char_path",
    "char_name",
    "check_url",
    "control_char_problem",
    "json_data_problem",
    "nul_path",
    "reject_control_chars",
    "reject_nul",
]
