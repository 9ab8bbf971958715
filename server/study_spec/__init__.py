"""The study file format: a pydantic model validated on import, API writes and activation.

A study spec is what a designer edits and what ``studies/*.yaml`` holds. The JSON Schema
in ``docs/study-schema.json`` is generated from :class:`StudySpec`. One module per part:
``base`` (the strict model, text and JSON checks), ``controls``, ``environments``,
``crowd`` and ``study`` (the root).
"""

from server.study_spec.base import StrictModel, char_name, control_char_problem, json_data_problem
from server.study_spec.controls import AxisBinding, Controls
from server.study_spec.crowd import MAX_TOUCH_BUTTONS, CrowdSettings
from server.study_spec.environments import (
    DmEnvSource,
    EnvironmentSpec,
    GymnasiumSource,
    PolicySpec,
    TaskSpec,
)
from server.study_spec.study import StudySpec

__all__ = [
    "MAX_TOUCH_BUTTONS",
    "AxisBinding",
    "Controls",
    "CrowdSettings",
    "DmEnvSource",
    "EnvironmentSpec",
    "GymnasiumSource",
    "PolicySpec",
    "StrictModel",
    "StudySpec",
    "TaskSpec",
    "char_name",
    "control_char_problem",
    "json_data_problem",
]
