"""One environment hosted in a worker process: its env, the current episode, the async clock.

A worker process (:mod:`server.runtime._child_loop`) hosts one or more :class:`HostedEnv`
objects, each of one player, in its slots. Each step is taken here: map the input, step the
env, render and encode its frame (:mod:`server.runtime.frames`), then hand the timestep
with its metadata to the episode's writer (journal first), and the frame to the app. A
hosted env sends its unasked messages, ``("event", step_event)`` and ``("error", error)``,
through ``conn``, which tags them with its slot; ``error`` is ``(type, message,
traceback)``. The protocol is in ``docs/runtime.md``.
"""

from __future__ import annotations

import math
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import dm_env
import numpy as np

from server.recording import deferred
from server.recording import format as fmt
from server.recording.writer import EpisodeWriter, episode_metadata, info_json, to_json
from server.runtime import _inspect
from server.runtime.adapters import EnvAdapter
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.autonomy import NO_AUTONOMY, shared_autonomy
from server.runtime.catalog import default_controls
from server.runtime.frames import QUALITY, check_observation, checked_frame, encode_jpeg
from server.runtime.input_mapping import ActionMapper
from server.runtime.presses import Presses
from server.study_spec import EnvironmentSpec, TaskSpec

MAX_CATCH_UP_S = 0.5  # further behind than this, the async clock skips instead of racing
# Workers run at a lower CPU priority than the app: when the cores are saturated, the app
# (every player's sockets, the database, the API) keeps its share and the workers' clocks
# slow down instead of the app starving among N workers (benchmarks/concurrency.py).
WORKER_NICE = 5
GOLDEN = 0.6180339887


def grid_phase(pid: int) -> float:
    """Where in the period (a fraction of it) the ticks of process ``pid`` fall: consecutive
    pids far apart."""
    return (pid * GOLDEN) % 1.0


class ProtocolError(RuntimeError):
    """A command that makes no sense now (out of order, unknown, bad payload)."""


def error_tuple(exc: BaseException) -> tuple[str, str, str]:
    """What crosses the pipe for an exception."""
    return (type(exc).__name__, str(exc), traceback.format_exc())


class Sender(Protocol):
    """Where a hosted env's unasked messages go (its slot's view of the process's socket)."""

    def send(self, message: tuple[Any, ...]) -> None: ...


@dataclass(frozen=True)
class EpisodeLogs:
    """Where a worker process records its episodes: the study's folder under ``data_root``,
    flushed every ``flush_interval_s``."""

    study_id: str
    data_root: Path
    flush_interval_s: float


class HostedEnv:
    """One environment in a worker process's slot: its env, the current episode, the clock."""

    def __init__(self, conn: Sender, spec: EnvironmentSpec, adapter: EnvAdapter,
                 logs: EpisodeLogs, allowed: AllowedEnvironments) -> None:  # fmt: skip
        self.conn, self.spec, self.env, self.logs = conn, spec, adapter, logs
        self.allowed = allowed
        adapter.max_steps = spec.max_steps
        adapter.max_duration_s = spec.max_duration_s
        controls = spec.controls or default_controls(spec.source)
        self.mapper = ActionMapper(
            adapter.action_spec(), controls, adapter.action_meanings,
            strict=spec.controls is not None,
        )  # fmt: skip
        # shared autonomy (None without a policy): who drove the last step, its record
        self.autonomy = shared_autonomy(spec.policy, adapter, self.mapper, allowed)
        self.observation: Any = None
        self.control = "null"
        self.quality = QUALITY[spec.image_quality]
        self.stream_every = 1  # the adaptive stream: send every n-th step's frame
        self.streamed = True  # whether the step being recorded is sent to the player
        if spec.camera:
            adapter.set_camera(spec.camera)
        self.writer: EpisodeWriter | None = None
        self.last_summary: dict[str, Any] | None = None  # of the last episode finalized
        self.episode_id: str | None = None
        self.ended = True
        self.step_index = -1
        self.total = 0.0
        # what the next recorded step carries
        self.held_input: Any = None
        self.held_timing: dict[str, Any] = {}
        self.presses = Presses()  # async: what went down since the last step (a tap counts)
        self.step_input: Any = None  # the input the step being recorded applied
        self.acks: list[Any] = []
        self.jpeg = b""
        # async clock
        self.running = False
        self.gated = False  # the episode waits for its player's go (started paused)
        self.speed = 1.0
        self.next_tick = 0.0  # when the current slot (one step per 1/fps) ends
        self.fresh_input = False  # step_on_input: an input arrived that no step applied yet

    # -- recording --------------------------------------------------------------------------
    def _record(self, timestep: dm_env.TimeStep, action: Any, *, first: bool = False) -> None:
        """The step just taken: encode its frame, then record it with its input, timing and
        info (in the journal before this returns, so before the frame is sent)."""
        self.jpeg = self.frame_jpeg()
        assert self.writer is not None
        self.writer.record(timestep, action, self._metadata(timestep), first=first)

    def frame_jpeg(self) -> bytes:
        """The env's current frame as JPEG at the stream's quality (within the limits)."""
        return encode_jpeg(checked_frame(self.env.frame()), self.quality)

    def _metadata(self, timestep: dm_env.TimeStep) -> dict[str, Any]:
        """The step metadata of this timestep: its frame, input, timing and info."""
        # A fresh input's timing goes with the first step that applies it; async steps that
        # apply the held input again get only ``applied``.
        timing, self.held_timing = self.held_timing, {}
        timing["applied"] = fmt.now_ms()
        timing["jpeg_quality"] = self.quality  # the stream's, which may adapt (never the obs)
        if len(self.env.cameras) > 1:
            timing["camera"] = self.env.camera  # the frame's view (never the observation's)
        if self.spec.mode == "async":
            timing["speed"] = self.speed  # the clock's speed factor in force (1 = its fps)
        self.streamed = self._streams(timestep, "input_sent" in timing)
        if self.stream_every > 1:
            timing["stream_every"] = self.stream_every
            timing["streamed"] = self.streamed
        if self.acks:
            timing["acks"], self.acks = self.acks, []
        return {
            "frame": self.jpeg,
            "input": to_json(self.step_input),
            "timing": to_json(timing),
            "info": info_json(self.env.last_info),
            "control": self.control,
        }

    def _streams(self, timestep: dm_env.TimeStep, fresh_input: bool) -> bool:
        """Whether this step's frame goes to the player: all of them, or with the adaptive
        stream's lower frame rate every n-th, the first, the last and any with a fresh input."""
        if self.stream_every == 1 or timestep.first() or timestep.last() or fresh_input:
            return True
        return (self.step_index + 1) % self.stream_every == 0  # (recorded before the count)

    def begin_episode(self, payload: dict[str, Any]) -> tuple[Any, ...]:
        episode_id = str(payload["episode_id"])
        seed = payload.get("seed")
        if not self.ended or self.writer is not None:
            self.end_episode({"reason": fmt.END_REPLACED})
        self.env.set_seed(seed)
        logs = self.logs
        directory = fmt.episode_dir(logs.data_root, logs.study_id, episode_id)
        spec = self.spec
        if payload.get("task") is not None:  # the log's config names the task it drew
            spec = spec.model_copy(update={"tasks": [TaskSpec.model_validate(payload["task"])]})
        meta = episode_metadata(
            episode_id=episode_id, study_id=logs.study_id, env_id=self.spec.id,
            env_config=spec.model_dump_json(), seed=seed,
        )  # fmt: skip
        self.writer = EpisodeWriter(
            self.env, directory, meta, flush_interval_s=logs.flush_interval_s, defer_records=True,
            background_flush=True,
        )  # fmt: skip
        # A person's step draws only the view shown; the observation's images, drawn later
        # from the recorded states, unless a policy looks at them (docs/runtime.md)
        if self.allowed.defer_images and self.autonomy is None:
            keys = self.env.defer_images(True)
            if keys:
                deferred.mark(directory, keys)
        self.episode_id, self.ended, self.step_index, self.total = episode_id, False, 0, 0.0
        self.held_input, self.held_timing, self.acks, self.step_input = None, {}, [], None
        self.presses.clear()
        self.fresh_input = False
        self.mapper.reset()  # toggles off
        self.control = "null"
        if self.autonomy is not None:
            self.autonomy.reset()
        try:
            timestep = self.env.reset()
            self._record(timestep, None, first=True)
            check_observation(timestep.observation)
            self.observation = timestep.observation
        except BaseException:
            self._fail()
            raise
        # paused: the ready gate; nothing steps (and the duration does not run) until resume
        self.gated = bool(payload.get("paused"))
        if self.spec.mode == "async" and not self.gated:
            self.running = True
            self.next_tick = self._on_grid(time.monotonic() + self.period)
        return self.event(timestep)

    def step(self) -> tuple[Any, ...]:
        if self.writer is None or self.ended:
            raise ProtocolError("no episode is running: call begin_episode first")
        started = time.perf_counter()
        self.step_input = raw = self.presses.apply(self.held_input)
        action = self.mapper(raw)
        if self.autonomy is not None:
            active = self.mapper.human_active(raw)
            action, self.control = self.autonomy.step(self.observation, action, active)
        try:
            timestep = self.env.step(action)
            self._record(timestep, action)
        except BaseException:
            self._fail()
            raise
        self.observation = timestep.observation
        self.step_index += 1
        self.total += float(timestep.reward or 0.0)
        if timestep.last():
            self.ended, self.running = True, False
            self._finalize(self.env.end_reason or fmt.END_TERMINATED)
        return self.event(timestep, started)

    def event(self, timestep: dm_env.TimeStep, started: float | None = None) -> tuple[Any, ...]:
        """The step's event, as its fields in ``_wire.EVENT_FIELDS``' order."""
        reason = self.env.end_reason if timestep.last() else None
        return (
            self.episode_id,
            self.step_index,
            float(timestep.reward or 0.0),
            self.total,
            reason == fmt.END_TERMINATED,  # terminated
            timestep.last() and reason != fmt.END_TERMINATED,  # truncated
            reason,
            self.jpeg if self.streamed else b"",
            fmt.now_ms(),  # worker_ms
            0.0 if started is None else (time.perf_counter() - started) * 1000,  # work_ms
            *(NO_AUTONOMY if self.autonomy is None else self.autonomy.event()),
            reported_success(self.env.last_info) if timestep.last() else None,
        )

    def _finalize(self, reason: str) -> dict[str, Any]:
        self.env.defer_images(False)  # previews and Validate's trials draw everything
        values = (self.episode_id, reason, self.step_index + 1, self.total)
        summary = dict(zip(fmt.EPISODE_END_METADATA_KEYS, values, strict=True))
        if self.writer is not None:
            self.writer.finalize(summary)
            self.writer = None
        self.last_summary = summary
        return summary

    def _fail(self) -> None:
        self.ended, self.running = True, False
        self._finalize(fmt.END_FAILED)

    def end_episode(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Finalize the log and return its summary; safe when nothing runs (None then).

        Naming ``episode_id`` an episode that already ended on its own (its last steps may
        still be on their way to the app) returns that episode's summary, marked
        ``ended_before``: the app's count must be the log's.
        """
        self.running = False
        if self.writer is None:
            last = self.last_summary
            if last is not None and payload.get("episode_id") == last["episode_id"]:
                return {**last, "ended_before": True,
                        "success": reported_success(self.env.last_info)}  # fmt: skip
            return None
        self.ended = True
        summary = self._finalize(str(payload.get("reason") or "ended"))
        return {**summary, "success": reported_success(self.env.last_info)}

    # -- async clock ------------------------------------------------------------------------
    @property
    def period(self) -> float:
        return 1.0 / (self.spec.fps * self.speed)

    def _on_grid(self, t: float) -> float:
        """The first tick of this process's grid for the clock's period at or after ``t``.

        The hosted envs of one process that play at one pace tick together, so one wake-up
        steps them all (docs/performance.md, "A flush thread per process, ticks on a grid");
        each process has its own phase (from its pid), so that processes do not all wake at
        once.
        """
        period = self.period
        phase = grid_phase(os.getpid()) * period
        return phase + math.ceil((t - phase) / period) * period

    def tick_due(self) -> float | None:
        """Seconds until the next async step (None when the clock is stopped).

        The clock runs one step per slot of 1/fps, at the slot's end; with ``step_on_input``
        a fresh input brings its slot's step forward to its arrival (or to the next slot's
        start, when this slot's step already ran): still one step per slot, the pace unchanged.
        """
        if not self.running:
            return None
        due = self.next_tick - time.monotonic()
        if self.fresh_input:
            return max(0.0, due - self.period)
        return due

    def tick(self) -> None:
        self.fresh_input = False
        now = time.monotonic()
        if now - self.next_tick > MAX_CATCH_UP_S:
            # far behind (e.g. the app stalled): skip to the grid's next slot, don't race
            self.next_tick = self._on_grid(now) - self.period
        self.next_tick += self.period
        try:
            event = self.step()
        except BaseException as exc:
            self.conn.send(("error", error_tuple(exc)))
            return
        self.conn.send(("event", event))

    # -- commands -------------------------------------------------------------------------
    def handle(self, command: str, payload: Any) -> Any:
        if command == "input":
            if self.spec.mode == "async":
                self.presses.note(self.held_input, payload.get("input"))
            self.held_input = payload.get("input")
            self.held_timing = payload.get("timing") or {}
            self.held_timing.setdefault("worker_recv", fmt.now_ms())
            self.acks.extend(payload.get("acks") or [])
            if self.spec.mode == "sync":
                return self.step()
            self.fresh_input = self.spec.step_on_input
            return None
        if command == "acks":
            self.acks.extend(payload)
            return None
        if command == "begin_episode":
            return self.begin_episode(payload)
        if command == "end_episode":
            return self.end_episode(payload)
        if command == "pause":
            self.running = False
            return None
        if command == "resume":
            if self.gated:
                self.gated = False
                self.env.start_clock()
            if self.spec.mode == "async" and not self.ended:
                self.running = True
                self.next_tick = self._on_grid(time.monotonic() + self.period)
            return None
        if command == "set_speed":
            speed = float(payload["speed"])
            if not 0.05 <= speed <= 10:
                raise ProtocolError("speed must be within [0.05, 10]")
            last_tick = self.next_tick - self.period
            self.speed = speed
            self.next_tick = last_tick + self.period
            return None
        if command == "set_quality":
            self.quality = QUALITY[payload["quality"]]
            return None
        if command == "set_stream_every":
            every = payload.get("every")
            if not isinstance(every, int) or not 1 <= every <= 120:
                raise ProtocolError("every must be an integer within [1, 120]")
            self.stream_every = every
            return None
        if command == "set_camera":
            self.env.set_camera(str(payload["camera"]))
            return None
        if command == "ping":
            return "pong"
        if command in _inspect.COMMANDS:  # Validate's questions, between episodes only
            if self.writer is not None:
                raise ProtocolError(f"an episode is running: end it before a {command}")
            return _inspect.COMMANDS[command](self, payload)
        raise ProtocolError(f"unknown command {command!r}")

    def commit(self) -> None:
        """Write the step(s) just replied to: recording happens off the reply's path."""
        if self.writer is None:
            return
        try:
            self.writer.commit()
        except Exception as exc:
            error = error_tuple(exc)
            try:
                self._fail()  # closes the log with what could be written
            except Exception:
                self.writer = None
            self.conn.send(("error", error))

    def flush_due(self) -> float | None:
        return self.writer.seconds_to_flush() if self.writer is not None else None


def reported_success(info: dict[str, Any]) -> bool | None:
    """What the environment's ``info`` says of success (``is_success``: a bool, or 0/1 as
    gymnasium-robotics reports it); None when it says nothing a bool can hold."""
    value = info.get("is_success")
    if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
        if value in (0, 1):
            return bool(value)
    return None
