"""An environment worker process: one or more hosted environments on one loop.

Runs :func:`worker_main` in a child process. A process hosts the environments (one player
each, :class:`server.runtime.hosted_env.HostedEnv`) that the app puts in it: one by default, up
to ``sessions_per_worker`` of light environments of the same study (the app decides,
:mod:`server.runtime.worker_process`). Its loop sleeps until the next command, tick or log flush
of any of them, so several hosted envs share a process's wake-ups. Protocol (``docs/runtime.md``):

- app → worker: ``(slot, command, payload, request_id)``; ``request_id`` is None when no
  reply is wanted (async-mode input, acks). ``open`` (payload: the environment spec's JSON)
  builds a hosted env in a new slot; ``close`` ends one; the process exits when its last
  hosted env is closed.
- worker → app: ``("ready", slot, info)`` or ``("failed", slot, error)`` once per ``open``,
  ``("reply", request_id, ok, result)``, and unasked ``("event", slot, step_event)`` and
  ``("error", slot, error)``. ``error`` is ``(type, message, traceback)``.
"""

from __future__ import annotations

import contextlib
import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from server.recording import format as fmt
from server.runtime import _inspect
from server.runtime._wire import frame_message
from server.runtime.adapters import build_adapter
from server.runtime.allowlist import AllowedEnvironments
from server.runtime.hosted_env import (
    WORKER_NICE,
    EpisodeLogs,
    HostedEnv,
    ProtocolError,
    error_tuple,
)
from server.study_spec import EnvironmentSpec

# Commands served in one pass of the loop before the clocks' due steps, at most: all that
# are waiting (the app's rate limits bound them), and the clocks still run under a flood.
MAX_COMMANDS_PER_PASS = 1000


class _Outgoing:
    """The process's messages to the app, framed as ``Connection.send`` frames them and
    written together by :meth:`flush`: one write for the events of all the hosted envs that
    ticked at once, instead of one each (docs/performance.md, "One encoding, one write")."""

    def __init__(self, conn: Connection) -> None:
        self.fd = conn.fileno()
        self.frames: list[bytes] = []

    def send(self, message: tuple[Any, ...]) -> None:
        self.frames.append(frame_message(message))

    def flush(self) -> None:
        frames, self.frames = self.frames, []
        if not frames:
            return
        done = os.writev(self.fd, frames)
        if done < sum(len(frame) for frame in frames):  # the socket's buffer was full
            rest = memoryview(b"".join(frames))[done:]
            while rest:
                rest = rest[os.write(self.fd, rest) :]


class _SlotConn:
    """A hosted env's view of the process's connection: its messages carry its slot."""

    def __init__(self, out: _Outgoing, slot: int) -> None:
        self.out, self.slot = out, slot

    def send(self, message: tuple[Any, ...]) -> None:
        self.out.send((message[0], self.slot, *message[1:]))


class WorkerLoop:
    """The hosted envs of one worker process and the loop that serves them all."""

    def __init__(self, conn: Connection, allowed: AllowedEnvironments,
                 logs: EpisodeLogs) -> None:  # fmt: skip
        self.conn = conn
        self.out = _Outgoing(conn)
        self.allowed = allowed
        self.logs = logs
        self.hosted: dict[int, HostedEnv] = {}

    def open(self, slot: int, spec_json: str) -> None:
        """Build a hosted env in ``slot``; ``ready`` or ``failed`` goes back."""
        adapter = None
        try:
            if slot in self.hosted:
                raise ProtocolError(f"slot {slot} is taken")
            spec = EnvironmentSpec.model_validate_json(spec_json)
            adapter = build_adapter(spec.source, self.allowed)
            hosted = HostedEnv(_SlotConn(self.out, slot), spec, adapter, self.logs, self.allowed)
            info = _inspect.info(hosted)
        except Exception as exc:
            if adapter is not None:
                with contextlib.suppress(Exception):
                    adapter.close()
            self.out.send(("failed", slot, error_tuple(exc)))
            return
        self.hosted[slot] = hosted
        self.out.send(("ready", slot, info))

    def close(self, slot: int, reason: str = fmt.END_CLOSED) -> None:
        """End a hosted env's episode and close its environment (nothing when there is none)."""
        hosted = self.hosted.pop(slot, None)
        if hosted is not None:
            try:
                hosted.end_episode({"reason": reason})
            finally:
                hosted.env.close()

    def _due(self) -> float | None:
        waits = [w for hosted in self.hosted.values()
                 for w in (hosted.tick_due(), hosted.flush_due()) if w is not None]  # fmt: skip
        return max(0.0, min(waits)) if waits else None

    def serve(self, slot: int, command: str, payload: Any, rid: int | None) -> bool:
        """One command from the app; False once the process should exit."""
        if command == "open":
            self.open(slot, payload)
            return True
        if command == "close":
            try:
                self.close(slot)
            finally:
                self.out.send(("reply", rid, True, None))
            return bool(self.hosted)
        hosted = self.hosted.get(slot)
        try:
            if hosted is None:
                raise ProtocolError(f"no session in slot {slot}")
            result, ok = hosted.handle(command, payload or {}), True
        except Exception as exc:
            result, ok = error_tuple(exc), False
        if rid is not None:
            self.out.send(("reply", rid, ok, result))
        elif not ok:
            self.out.send(("error", slot, result))
        self.out.flush()  # the reply before the step's recording
        if hosted is not None:
            hosted.commit()
        return True

    def run(self) -> None:
        """Serve commands and every hosted env's async clock until the last one closes."""
        while True:
            if self.conn.poll(self._due()):
                # Every command already waiting, before the clocks step: a clock that runs
                # behind (a step longer than its period) steps back to back, and serving one
                # command per step let the player's inputs queue up behind its steps, a
                # cancel seconds (on a busy machine a minute) behind them, the session
                # silent meanwhile. Async inputs only set the held input (a tap is latched).
                for _ in range(MAX_COMMANDS_PER_PASS):
                    serving = self.serve(*self.conn.recv())
                    self.out.flush()
                    if not serving:
                        return
                    if not self.conn.poll(0):
                        break
            ticked = []
            for hosted in list(self.hosted.values()):
                due = hosted.tick_due()
                if due is not None and due <= 0:
                    hosted.tick()
                    ticked.append(hosted)
            self.out.flush()  # the steps' events, before their recording
            for hosted in ticked:
                hosted.commit()
            self.out.flush()  # errors of the recording
            for hosted in self.hosted.values():
                if hosted.writer is not None:
                    hosted.writer.flush_if_due()

    def exit(self) -> None:
        """Close every hosted env (the app went away or the process is ending)."""
        for slot in list(self.hosted):
            with contextlib.suppress(Exception):
                self.close(slot, "worker_exit")


def worker_main(conn: Connection, allowed: AllowedEnvironments, study_id: str, data_root: str,
                flush_interval_s: float) -> None:  # fmt: skip
    """Child process entry point (``allowed``: what the operator allows, checked first)."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    loop = WorkerLoop(conn, allowed, EpisodeLogs(study_id, Path(data_root), flush_interval_s))
    try:
        loop.run()
    except (EOFError, BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass  # the app went away: fall through to close the episodes and the envs
    finally:
        try:
            loop.exit()
        finally:
            conn.close()
