"""The pre-launch checklist: every reason a study would fail its participants or its data.

Each item is ``{level, code, message, fix, field, label, loc, msg}``: ``level`` ``error``
(activation is refused) or ``warning`` (activation asks once, ``acknowledge_warnings``),
``message`` what goes wrong in the designer's words, ``fix`` what to do, ``field`` the spec
path (``crowd.completion_code``) and ``label`` the form's name for it. ``loc`` (``["spec",
*path]``) and ``msg`` (the message) repeat them in the shape of a 422's ``detail``, so a
client that lists problems lists these too. Read from the spec and, where there is one, its
validation report (:func:`server.services.studies.env_validation.validate_study`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from server.errors import Conflict, Invalid
from server.runtime.catalog import default_controls
from server.services.studies.checklist_items import Item, Loc, item
from server.study_spec import MAX_TOUCH_BUTTONS, Controls, EnvironmentSpec, StudySpec, touch


def _env_loc(index: int, *rest: str | int) -> Loc:
    return ("environments", index, *rest)


def _completion(spec: StudySpec) -> Iterable[Item]:
    crowd = spec.crowd
    has_completion = bool(crowd.completion_code or crowd.completion_url)
    if "prolific" in crowd.platforms and not has_completion:
        yield item(
            "error", "no_completion_code", ("crowd", "completion_code"),
            "Participants from Prolific would finish with no completion code and no "
            "redirect: Prolific would not know they finished, and they could not be paid.",
            "Enter the completion code of your Prolific study (under Completion) as the "
            "Completion code, or set a Completion URL.",
        )  # fmt: skip
    if "prolific" in crowd.platforms and not (crowd.screenout_code or crowd.screenout_url):
        yield item(
            "warning", "no_screenout_code", ("crowd", "screenout_code"),
            "Participants from Prolific who decline the consent or leave on a device that "
            "cannot play would get no code: they would have to return the study themselves.",
            "Add a screen-out code in Prolific and enter it as the Screen-out code.",
        )  # fmt: skip
    if not crowd.platforms and not has_completion:
        yield item(
            "warning", "platform_not_said", ("crowd", "platforms"),
            "There is no completion code, and the study does not say where participants "
            "come from: anyone who arrives from Prolific would finish with no code and no "
            "redirect.",
            "Tick where participants come from. For Prolific, also enter its completion "
            "code as the Completion code; for a link you share yourself, tick Direct link "
            "or anonymous.",
        )  # fmt: skip


def _controls(env: EnvironmentSpec) -> Controls:
    return env.controls if env.controls is not None else default_controls(env.source)


def _taps_matter(controls: Controls) -> bool:
    """A key or button that picks a discrete action: its moment is the point. A toggle of a
    vector action (a gripper) is no such tap: it latches a state that the next step carries,
    and an arm's data wants steps at a regular rate, which stepping on input would break."""
    values = [*controls.keys.values(), *controls.buttons.values()]
    return any(isinstance(v, int | str) for v in values)


def _environment(spec: StudySpec, index: int, env: EnvironmentSpec) -> Iterable[Item]:
    controls = _controls(env)
    if env.mode == "async" and not env.step_on_input and _taps_matter(controls):
        wait_ms = round(1000 / (env.fps * env.speed))
        yield item(
            "warning", "step_on_input_off", _env_loc(index, "step_on_input"),
            f"{env.name}: a key or button press waits for the next step, up to {wait_ms} ms "
            f"at {env.fps} steps/s, before the game answers it; quick taps feel late.",
            "Tick Step on input so a press steps the game at once (the pace stays the same).",
        )  # fmt: skip
    if "touch" in spec.crowd.inputs and not touch.playable_by_touch(controls):
        buttons = len(touch.key_buttons(controls))
        why = ("it has no key bindings" if buttons == 0 else
               f"it has {buttons} key bindings, and phones get buttons for at most "
               f"{MAX_TOUCH_BUTTONS}")  # fmt: skip
        yield item(
            "warning", "no_touch_buttons", _env_loc(index, "controls"),
            f"{env.name}: participants on a phone or tablet would see no controls to play "
            f"it with ({why}, and no binding reads the touch controls); they are told so "
            "before consent.",
            f"Bind touch pads or touch buttons to its actions in its Controls (Device…), "
            f"or 1 to {MAX_TOUCH_BUTTONS} keys, or untick Touch under Participants play "
            "with.",
        )  # fmt: skip
    total = env.episodes_total
    if total is not None and total < env.episodes_per_participant:
        yield item(
            "warning", "total_below_per_participant", _env_loc(index, "episodes_total"),
            f"{env.name}: Episodes in total ({total}) is below Episodes per participant "
            f"({env.episodes_per_participant}): the first participant fills it before "
            "finishing, and nobody else plays it.",
            "Raise Episodes in total, or lower Episodes per participant.",
        )  # fmt: skip


def _longest_episode_s(env: EnvironmentSpec) -> float | None:
    """The longest an episode can last (None: no limit), from max_duration_s and, in async
    mode, max_steps at the environment's pace."""
    limits = [env.max_duration_s] if env.max_duration_s is not None else []
    if env.mode == "async" and env.max_steps is not None:
        limits.append(env.max_steps / (env.fps * env.speed))
    return min(limits) if limits else None


def _quotas(spec: StudySpec) -> Iterable[Item]:
    wanted = spec.crowd.requirements.min_play_time_s
    if not wanted:
        return
    most = 0.0
    for env in spec.environments:
        longest = _longest_episode_s(env)
        if longest is None:
            return  # an episode without a time limit can last as long as needed
        per = env.episodes_per_participant
        episodes = min(per, env.episodes_total or per)
        most += longest * episodes
    if most < wanted:
        yield item(
            "error", "play_time_unreachable", ("crowd", "requirements", "min_play_time_s"),
            f"Required play time is {wanted:g} s, but the episodes a participant may play "
            f"last at most {most:g} s together: nobody could ever complete the study.",
            "Lower Required play time, or allow more or longer episodes (Episodes per "
            "participant, Max duration, Max steps).",
        )  # fmt: skip


REPLAY_FIX = (
    "Seed the environment's randomness from its reset seed (or choose another environment); "
    "activate anyway if its episodes need not be re-simulated."
)


def _from_reports(reports: list[dict[str, Any]]) -> Iterable[Item]:
    """Validation's problems (errors) and warnings, field paths from the study's root."""
    for report in reports:
        for problem in report["problems"]:
            loc = tuple(problem["loc"])
            unbound = loc[-1:] == ("controls",) and "not for players" in problem["msg"]
            code = "unbound_action" if unbound else "environment_problem"
            yield item("error", code, loc, problem["msg"])
        for warning in report["warnings"]:
            loc = tuple(warning["loc"])
            if warning.get("code") == "not_replayable":
                yield item("warning", "not_replayable", loc, warning["msg"], REPLAY_FIX)
                continue
            yield item("warning", "environment_warning", loc, warning["msg"])


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


MAX_BUDGET_MS = 1000  # STUDIO_POLICY_STEP_BUDGET_MS's highest (server/core/config.py)


def _policy(env: EnvironmentSpec, index: int, trial: dict[str, Any]) -> Iterable[Item]:
    """A policy that failed or missed its step budget when Validate let it drive."""
    loc, name = _env_loc(index, "policy", "id"), trial["id"]
    alone = f"participants of {env.name} would drive alone"
    if trial["failed"]:
        yield item(
            "error", "policy_failed", loc,
            f"The policy {name} failed in validation: {trial['error']}. Live, it would stop "
            f"at once and {alone}.",
            "Choose another Policy (or none), or have the policy's author fix it.",
        )  # fmt: skip
        return
    if not trial["over_budget"]:
        return
    median, worst, budget = trial["median_ms"] or 0.0, trial["worst_ms"] or 0.0, trial["budget_ms"]
    message = (
        f"The policy {name} takes {_ms(median)} a step in validation (median of "
        f"{trial['steps']}, worst {_ms(worst)}), over its {_ms(budget)} budget: live, it "
        f"would stop on its first slow step and {alone}."
    )
    if median >= MAX_BUDGET_MS:
        fix = f"Choose a faster Policy: the budget cannot be raised past {MAX_BUDGET_MS} ms."
    else:
        fix = (f"Choose a faster Policy, or have the operator raise "
               f"STUDIO_POLICY_STEP_BUDGET_MS above {_ms(median)}")  # fmt: skip
        fits = int(1000 // median) if median else 0
        if env.mode == "async" and fits < env.fps * env.speed:
            fix += (f" and lower Steps per second (async) to {fits}, so that each step has "
                    "time for the policy" if fits else " (a real-time game cannot wait this "
                    "long a step: play it in sync mode)")  # fmt: skip
        fix += "."
    yield item("warning", "policy_over_budget", loc, message, fix)


def checklist(
    spec: StudySpec, reports: list[dict[str, Any]] | None = None, *, judged: Iterable[Item] = ()
) -> list[Item]:
    """Every item for ``spec`` (and its validation ``reports``, fields from the root):
    errors first, then warnings, each in the order of the form. A feedback study has no
    environments to check; ``judged`` are its items that need the database (what its
    participants would judge: :func:`server.services.studies.feedback_check.checklist`)."""
    if spec.judging is not None:
        return sorted([*_completion(spec), *judged], key=lambda i: i["level"] != "error")
    found: list[Item] = [*(_from_reports(reports) if reports else ())]
    for report in reports or ():
        trial = report.get("policy")
        index = report.get("index")
        if trial and isinstance(index, int) and index < len(spec.environments):
            found += _policy(spec.environments[index], index, trial)
    found += _completion(spec)
    found += _quotas(spec)
    for index, env in enumerate(spec.environments):
        found += _environment(spec, index, env)
    return sorted(found, key=lambda i: i["level"] != "error")


def enforce(items: list[Item], acknowledge_warnings: bool) -> None:
    """Refuse to activate: 422 ``not_ready`` with the errors while there are any, then 409
    ``unacknowledged_warnings`` with the warnings until they are acknowledged."""
    errors = [i for i in items if i["level"] == "error"]
    if errors:
        count = f"{len(errors)} thing{'s' if len(errors) > 1 else ''}"
        raise Invalid(
            f"The study cannot start yet: {count} to fix first.", detail=errors, code="not_ready"
        )
    if items and not acknowledge_warnings:
        raise Conflict(
            "Check these warnings first; activate with acknowledge_warnings: true to go ahead "
            "anyway.",
            detail=items, code="unacknowledged_warnings",
        )  # fmt: skip
