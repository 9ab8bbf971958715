"""Reading one episode's envlogger log and realigning it into RLDS steps.

envlogger records dm_env timesteps: (o_0) -> (a_0, r_0, d_0, o_1) -> ... -> (a_{T-1}, r, d, o_T),
each with step metadata (server/recording/format.py). An RLDS step t holds o_t with the action
taken at o_t and what followed it: a_t, r_t, d_t come from timestep t+1. The final observation
o_T is the last step, its action, reward and discount zero-filled; it is terminal only when the
environment terminated (dm_env LAST with discount 0; a truncation is LAST with discount 1).

Step metadata moves the same way: ``frame`` and ``info`` describe o_t and stay with it;
``input`` produced the action stored in timestep t+1, so it moves to step t with a_t; the
timing of that action moves with it, and the frame acknowledgements are mapped back to the
steps whose frames they are; ``control`` (shared autonomy: who chose the action, the player's
mapped action, the policy's proposal) moves with its action like ``input``. What the worker
recorded about o_t itself stays with it: the stream's JPEG quality of its frame, the
clock's speed factor in force (``timing`` keys ``jpeg_quality`` and ``speed``) and the camera
its frame was rendered from (``timing`` key ``camera``, in environments with several).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from server.export.errors import InvalidEpisodeError
from server.export.timings import (
    UNKNOWN,
    camera_or_none,
    realign_timings,
    step_timing,
    time_or_unknown,
)
from server.recording.envlogger_log import spec_codec, storage_pb2
from server.recording.log_reader import SPECS_KEY, decode, read_log

NO_INPUT = "null"
HUMAN, POLICY = 0, 1  # control sources (server/runtime/autonomy.py)


@dataclass(frozen=True)
class EnvSpecs:
    """dm_env specs of the recorded environment (nested dicts of ``specs.Array``)."""

    observation: Any
    action: Any
    reward: Any
    discount: Any


@dataclass
class RldsEpisode:
    """One episode as RLDS steps: list ``i`` of every field is step ``i``."""

    specs: EnvSpecs
    log_metadata: dict[str, Any]
    observations: list[Any] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    rewards: list[Any] = field(default_factory=list)
    discounts: list[Any] = field(default_factory=list)
    is_first: list[bool] = field(default_factory=list)
    is_last: list[bool] = field(default_factory=list)
    is_terminal: list[bool] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)
    # ints; a number the log holds that no int64 can (NaN, infinite) stays as it is, for the
    # encoder to refuse by step and field
    timings: list[dict[str, int | float]] = field(default_factory=list)
    # when the worker produced o_t (``applied`` of timestep t, ms since the epoch; -1 unknown):
    # the step's real time (LeRobot timestamps, episode videos)
    observed_ms: list[float] = field(default_factory=list)
    # the camera o_t's frame was rendered from ("" where the log names none: an environment
    # with one camera, or a log from before cameras were recorded)
    cameras: list[str] = field(default_factory=list)
    # shared autonomy, per step (its action's): who chose it (HUMAN 0 / POLICY 1), the
    # player's mapped action, the policy's proposal (zeros where it proposed none) and
    # whether there was one. Without a policy: the player, the executed action, zeros.
    control_sources: list[int] = field(default_factory=list)
    human_actions: list[Any] = field(default_factory=list)
    policy_actions: list[Any] = field(default_factory=list)
    has_policy_action: list[bool] = field(default_factory=list)
    autonomous: bool = False  # some step recorded a policy
    ended_at_tag: bool = False  # an export's end tag cut it (truncated_at)
    ended_at_trim: bool = False  # a dataset's trim dropped its last steps (trimmed)

    def __len__(self) -> int:
        return len(self.observations)

    @property
    def total_reward(self) -> float:
        """The episode's return (the last step's reward is zero)."""
        return float(sum(_reward_sum(r) for r in self.rewards))

    @property
    def terminated(self) -> bool:
        """Whether the environment terminated (rather than a truncation or an interruption)."""
        return bool(self.is_terminal and self.is_terminal[-1])

    def truncated_at(self, last: int) -> RldsEpisode:
        """This episode ending at step ``last``: it becomes the last step, not terminal."""
        if not 0 <= last < len(self):
            raise InvalidEpisodeError(f"cannot end an episode of {len(self)} steps at {last}")
        if last == len(self) - 1 and not self.is_terminal[-1]:
            return self
        n = last + 1
        # the episode's; the rest: lists by step
        whole = WHOLE_EPISODE
        steps = {f.name: getattr(self, f.name)[:n] for f in fields(self) if f.name not in whole}
        cut = replace(self, **steps)
        cut.timings[-1] = dict(cut.timings[-1])
        _zero_fill_last(cut)
        cut.is_terminal[-1] = False
        cut.ended_at_tag = True
        return cut

    def trimmed(self, start: int, end: int) -> RldsEpisode:
        """This episode without its first ``start`` and last ``end`` steps (a dataset's trim):
        the first kept step is first; the last kept step is last and, where ``end`` cuts,
        not terminal (a truncation, as :meth:`truncated_at` makes it, whose last step's
        action, reward and discount are zeros as every RLDS last step's). Every other kept
        value is the recorded one."""
        n = len(self)
        if start < 0 or end < 0 or n - start - end < 2:
            raise InvalidEpisodeError(
                f"cannot trim {start} first and {end} last steps of an episode of {n} steps: "
                "keep at least 2"
            )
        out = self
        if end:
            out = out.truncated_at(n - 1 - end)
            out.ended_at_tag, out.ended_at_trim = False, True
        if start:
            steps = {f.name: getattr(out, f.name)[start:] for f in fields(out)
                     if f.name not in WHOLE_EPISODE}  # fmt: skip
            out = replace(out, **steps)
            out.is_first[0] = True
        return out


WHOLE_EPISODE = ("specs", "log_metadata", "autonomous", "ended_at_tag", "ended_at_trim")


def _reward_sum(reward: Any) -> Any:
    """``np.sum(reward)``; a float scalar is its own sum (taken without np.sum's overhead)."""
    if isinstance(reward, np.ndarray) and reward.ndim == 0 and reward.dtype.kind == "f":
        return reward[()]
    return np.sum(reward)


def zeros_like_spec(spec: Any) -> Any:
    """Zeros with a (nested) spec's shapes and dtypes."""
    if isinstance(spec, dict):
        return {k: zeros_like_spec(s) for k, s in spec.items()}
    if isinstance(spec, list | tuple):
        return type(spec)(zeros_like_spec(s) for s in spec)
    return np.zeros(spec.shape, dtype=spec.dtype)


def _zero_fill_last(episode: RldsEpisode) -> None:
    specs = episode.specs
    episode.actions[-1] = zeros_like_spec(specs.action)
    episode.rewards[-1] = zeros_like_spec(specs.reward)
    episode.discounts[-1] = zeros_like_spec(specs.discount)
    episode.is_last[-1] = True
    episode.inputs[-1] = NO_INPUT
    episode.control_sources[-1] = HUMAN
    episode.human_actions[-1] = zeros_like_spec(specs.action)
    episode.policy_actions[-1] = zeros_like_spec(specs.action)
    episode.has_policy_action[-1] = False
    timing = episode.timings[-1]
    for key in ("input_sent_ms", "input_recv_ms", "applied_ms", "seen_step", "input_latency_ms"):
        timing[key] = UNKNOWN


def realign(steps: list[Any], specs: EnvSpecs, log_metadata: dict[str, Any]) -> RldsEpisode:
    """RLDS steps from one episode's envlogger ``StepData`` records (see the module doc)."""
    if not steps:
        raise InvalidEpisodeError("the episode's log holds no step")
    if sum(1 for s in steps if s.timestep.first()) > 1:
        raise InvalidEpisodeError("the log holds several episodes; one log per episode expected")
    episode = RldsEpisode(specs=specs, log_metadata=log_metadata)
    n = len(steps)
    for t, step in enumerate(steps):
        ts = step.timestep
        data = step.custom_data or {}
        nxt = steps[t + 1] if t + 1 < n else None
        episode.observations.append(ts.observation)
        episode.is_first.append(t == 0)
        episode.is_last.append(nxt is None)
        episode.frames.append(bytes(data.get("frame", b"")))
        episode.infos.append(str(data.get("info", "{}")))
        if nxt is None:
            # dm_env marks a termination with discount 0; a truncation or a log that just
            # stops (an abandoned episode) is not terminal.
            episode.is_terminal.append(bool(ts.last() and ts.discount == 0.0))
            episode.actions.append(None)
            episode.rewards.append(None)
            episode.discounts.append(None)
            episode.inputs.append(NO_INPUT)
        else:
            episode.is_terminal.append(False)
            episode.actions.append(nxt.action)
            episode.rewards.append(np.asarray(nxt.timestep.reward, dtype=specs.reward.dtype))
            episode.discounts.append(np.asarray(nxt.timestep.discount, dtype=specs.discount.dtype))
            episode.inputs.append(str((nxt.custom_data or {}).get("input", NO_INPUT)))
        _append_control(episode, t, None if nxt is None else nxt)
    raw = [step_timing(s) for s in steps]
    episode.timings = realign_timings(raw)
    episode.observed_ms = [time_or_unknown(r.get("applied")) for r in raw]
    episode.cameras = [camera_or_none(r.get("camera")) for r in raw]
    _zero_fill_last(episode)
    return episode


def unflatten_action(values: Any, spec: Any, where: str) -> Any:
    """A flattened action (a list of numbers) in the shape and dtypes of the action spec."""
    try:
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidEpisodeError(f"{where}: not a list of numbers ({exc})") from exc
    pos = 0

    def build(leaf: Any) -> Any:
        nonlocal pos
        if isinstance(leaf, dict):
            return {k: build(sub) for k, sub in leaf.items()}
        n = int(np.prod(leaf.shape))
        part = flat[pos : pos + n]
        pos += n
        dtype = np.dtype(leaf.dtype)
        if dtype.kind in "iub":
            part = np.round(part)
        return part.astype(dtype).reshape(leaf.shape)

    action = build(spec)
    if pos != flat.size or not np.all(np.isfinite(flat)):
        raise InvalidEpisodeError(f"{where}: {flat.size} values (not all finite?) for the action")
    return action


def _append_control(episode: RldsEpisode, t: int, nxt: Any) -> None:
    """Step ``t``'s control fields from the record stored with its action (see the doc)."""
    spec = episode.specs.action
    text = None if nxt is None else (nxt.custom_data or {}).get("control")
    try:
        record = json.loads(text) if text else None
    except ValueError:
        record = None
    if not isinstance(record, dict) or "human" not in record:
        episode.control_sources.append(HUMAN)
        action = zeros_like_spec(spec) if nxt is None else nxt.action
        episode.human_actions.append(action)
        episode.policy_actions.append(zeros_like_spec(spec))
        episode.has_policy_action.append(False)
        return
    episode.autonomous = True
    proposal = record.get("policy")
    episode.control_sources.append(POLICY if record.get("source") == "policy" else HUMAN)
    episode.human_actions.append(unflatten_action(record["human"], spec, f"step {t} control"))
    episode.has_policy_action.append(proposal is not None)
    episode.policy_actions.append(
        zeros_like_spec(spec) if proposal is None
        else unflatten_action(proposal, spec, f"step {t} control")
    )  # fmt: skip


def read_specs(meta: dict[str, Any]) -> EnvSpecs:
    """The environment specs envlogger stored with a log (``meta``: its decoded metadata,
    whose specs may be decoded already: :func:`_specs_of`)."""
    env_specs = meta.get(SPECS_KEY, {})
    if isinstance(env_specs, EnvSpecs):
        return env_specs
    env = spec_codec.decode_environment_specs(env_specs)
    return EnvSpecs(
        observation=env["observation_spec"],
        action=env["action_spec"],
        reward=env["reward_spec"],
        discount=env["discount_spec"],
    )


@functools.lru_cache(maxsize=64)
def _specs_of(serialized: bytes) -> EnvSpecs:
    """The specs of a log's serialized ``environment_specs``: the same for every log of an
    environment, so decoded once (about 0.1 ms a log; the specs are not changed by anyone)."""
    return read_specs({SPECS_KEY: decode(storage_pb2.Data.FromString(serialized))})


def log_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """The log-level metadata (format.EPISODE_METADATA_KEYS), without envlogger's own specs."""
    return {k: v for k, v in meta.items() if k != SPECS_KEY}


def read_header(log_dir: Path) -> tuple[EnvSpecs, dict[str, Any]]:
    """A log's specs and log-level metadata (its steps are not read)."""
    meta, _steps = read_log(str(log_dir), steps=False, specs=_specs_of)
    return read_specs(meta), log_metadata(meta)


def read_episode(log_dir: Path) -> RldsEpisode:
    """Read one episode's log (one envlogger log per episode) as RLDS steps."""
    if not Path(log_dir).is_dir():
        raise InvalidEpisodeError(f"no episode log at {log_dir}")
    try:
        meta, steps = read_log(str(log_dir), specs=_specs_of)
        specs = read_specs(meta)
    except InvalidEpisodeError:
        raise
    except Exception as exc:  # the Riegeli reader raises plain RuntimeErrors/ValueErrors
        raise InvalidEpisodeError(f"cannot read the episode log at {log_dir}: {exc}") from exc
    if specs.observation is None or specs.action is None:
        raise InvalidEpisodeError(f"the log at {log_dir} holds no environment specs")
    return realign(steps, specs, log_metadata(meta))
