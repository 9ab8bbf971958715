"""One handler per client message type; each runs under the session's lock.

Handlers raise :class:`PlayError` for a message that cannot be served now (the connection
answers with an ``error`` message naming it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from server.models import EpisodeStatus
from server.player import phone_pairing
from server.player import protocol as p
from server.player._run import EpisodeRun
from server.player.adaptive import QualityController
from server.player.outbox import Outbox
from server.player.session import (
    ACTIVE,
    LiveSession,
    Phase,
    PlayError,
    refused,
    wrong_state,
)
from server.player.views import uses_phone
from server.recording.format import now_ms
from server.runtime import WorkerError
from server.services.crowd import phone_codes
from server.services.crowd.progress import FAILED_MESSAGE
from server.services.review import quality

log = logging.getLogger(__name__)
ACK_FLUSH = 30  # async mode: hand acks to the worker at least this often (in frames)


async def on_ping(s: LiveSession, msg: p.PingMsg) -> None:
    """Answer with the server time."""
    s.send({"type": "pong", "client_ms": msg.client_ms, "server_ms": now_ms()})


async def on_start(s: LiveSession, msg: p.StartMsg) -> None:
    """Start an episode of one environment (a worker is started or reused).

    Participants: consent first; in a ``balanced`` study the assigned environment (``env_id``
    may be left out); never a finished, full or failed one (quotas are checked again,
    atomically, when the episode row is made).
    """
    if s.phase != Phase.idle:
        raise wrong_state(s.phase, "start an episode")
    env_id = msg.env_id
    extra = False
    if s.principal.participant_id is not None:
        state = await s.participant_state()
        assert state is not None
        env_id, extra = start_check(s, state, env_id)
    if env_id is None:
        raise PlayError("invalid", "start: env_id: name the environment to play")
    try:
        env = s.spec.environment(env_id)
    except KeyError:
        raise PlayError("unknown_env", f"the study has no environment {env_id!r}") from None
    s.phase = Phase.starting
    try:
        await s.begin(env.id, extra=extra)
    finally:
        if s.phase == Phase.starting:
            s.phase = Phase.idle


def start_check(s: LiveSession, state: dict[str, Any], env_id: str | None) -> tuple[str, bool]:
    """The environment a participant may start now (and whether it is past their quota
    because a requirement is still unmet), or the PlayError saying why not."""
    if state["screened_out"]:
        raise refused("screened_out", "you did not consent to this study", state)
    if state["outcome"] in ("completed", "full"):
        raise refused("study_done", "you have finished this study", state)
    if state["study_state"] in ("paused", "closed"):  # changed since the socket opened
        words = {"paused": "the study is paused for a moment; please try again later",
                 "closed": "the study has ended and takes no more episodes"}  # fmt: skip
        kind = state["study_state"]
        raise PlayError(f"study_{kind}", words[kind],
                        {"next": {"kind": kind, "env_id": None}, "participant": state})  # fmt: skip
    if state["consent_required"] and not state["consented"]:
        raise refused("consent_required", "please accept the consent form first", state)
    assigned = state["assigned_env"]
    if s.spec.crowd.assignment == "balanced":
        if env_id is not None and env_id != assigned:
            raise refused("assigned_elsewhere", "another environment is assigned to you", state)
        if assigned is None:
            raise refused("quota_reached", "there is nothing left for you to play", state)
        env_id = assigned
    if env_id is None or env_id not in state["progress"]:
        raise PlayError("unknown_env", f"the study has no environment {env_id!r}")
    info = state["progress"][env_id]
    name = s.spec.environment(env_id).name
    if info["status"] == "finished":
        raise refused("quota_reached", f"you have played all episodes of {name}", state)
    if info["status"] == "full":
        raise refused("env_full", f"{name} has all the episodes it needs", state)
    if info["status"] == "failed":
        raise refused("env_failed", FAILED_MESSAGE, state)
    return env_id, info["completed"] >= info["required"]


async def on_go(s: LiveSession, _msg: p.GoMsg) -> None:
    """Past the ready gate: the episode starts (async: its clock runs)."""
    if s.phase != Phase.ready or s.run is None or s.worker is None:
        raise wrong_state(s.phase, "start playing")
    await s.go()


async def on_input(s: LiveSession, msg: p.InputMsg) -> None:
    """Sync: step with the input. Async: hold it for the next tick."""
    if not s.fresh_input(msg.seq):
        return  # its other copy came first (lanes)
    run = s.run
    if s.phase == Phase.ended:
        return  # pressed as the game ended (the two crossed): nothing to step, no error
    if s.phase != Phase.playing or run is None or s.worker is None:
        raise wrong_state(s.phase, "send input")
    s.desktop_raw = msg.raw()
    timing = {"input_sent": msg.client_ms, "input_recv": now_ms(), "seen_step": msg.seen_step}
    await forward_input(s, timing)


async def forward_input(s: LiveSession, timing: dict[str, Any]) -> None:
    """Hand the player page's latest input, with the phone's, to the worker (lock held)."""
    run, worker = s.run, s.worker
    assert run is not None and worker is not None
    raw = s.phone.merged(s.desktop_raw)
    try:
        event = await worker.send_input(raw, timing, run.take_acks())
    except WorkerError as exc:
        await s.fail(exc)
        return
    held = quality.held_controls(raw)
    if event is None:  # async: applied at the next tick
        run.pending_input_ms, run.forwarded_ms = timing["input_sent"], now_ms()
        run.pending_held = held
    else:
        run.held = held
        run.applied(event.step, timing["input_sent"])
        await s.on_event(event)


async def on_phone_pair(s: LiveSession, msg: p.PhonePairMsg) -> None:
    """A new pairing for the panel: a QR code of the phone page's address (under
    ``STUDIO_PUBLIC_URL`` when set, else the page's origin) and a code; ``loopback`` when that
    address is one no phone can reach."""
    if not any(uses_phone(env) for env in s.spec.environments):
        raise PlayError("no_phone", "this study's controls do not use a phone")
    replica = s.settings.replica_id  # the phone's socket must reach this replica
    if phone_pairing.page_url(msg.origin, "", replica) is None:
        raise PlayError("invalid", "phone_pair: origin: give the page's location.origin")
    ticket, expires, ttl = s.phone.pair(s.settings.secret_key, replica)
    code = await s.db(phone_codes.add, s.id, replica, ticket, expires)  # any replica redeems it
    url = phone_pairing.page_url(msg.origin, ticket, replica, s.settings.public_url)
    assert url is not None
    s.send({"type": "phone_pairing", "code": code, "url": url, "replica": replica,
            "qr": phone_pairing.qr_svg(url), "expires_s": ttl,
            "loopback": phone_pairing.is_loopback(url)})  # fmt: skip


async def on_phone_confirm(s: LiveSession, msg: p.PhoneConfirmMsg) -> None:
    """Let a second phone replace the connected one (or refuse it)."""
    if s.phone.pending is None or s.phone.pending.done():
        raise PlayError("no_request", "no other phone is waiting to connect")
    s.phone.pending.set_result(msg.accept)


async def on_ack(s: LiveSession, msg: p.AckMsg) -> None:
    """Record that a frame was drawn; report latency now and then. (Its socket's frame
    window was settled by the connection it came over, drawn or skipped.)"""
    if msg.skipped:
        return  # overtaken on another socket (lanes): not drawn, nothing to record
    run = s.run
    if run is None or msg.episode != run.index or msg.step > run.step:
        return  # a late ack of an earlier episode, or nonsense: nothing to record
    sent_ms = run.frame_drawn(msg.step, msg.drawn_ms)
    if sent_ms is not None:
        await _adapt_quality(s, run, msg.step, now_ms() - sent_ms)
    if run.stats_due():
        recent = quality.percentile(run.latencies_ms[-60:], 50)
        s.send({"type": "stats", "latency_ms": recent, "frames_dropped": run.frames_dropped})
    if (s.phase == Phase.playing and s.worker is not None
            and s.worker.info.get("mode") == "async" and len(run.acks) >= ACK_FLUSH):  # fmt: skip
        with contextlib.suppress(WorkerError):  # the pump reports a dead worker
            await s.worker.send_acks(run.take_acks())


async def _adapt_quality(s: LiveSession, run: EpisodeRun, step: int, delay_ms: float) -> None:
    """The adaptive stream (``adaptive_quality``): one more ack delay. Async frames are
    ack-clocked by it; a new level (or frame rate, see ``min_stream_fps``) is sent to the
    worker (the frames that follow, and their records, carry it) and to the page."""
    env = s.spec.environment(run.env_id)
    if not env.adaptive_quality or s.worker is None or s.phase != Phase.playing:
        return
    stream = s.adaptive
    if stream is None or stream.env_id != run.env_id:
        stream = s.adaptive = QualityController(
            s.quality or env.image_quality, run.env_id, env.max_stream_every
        )
    outboxes = s.frame_outboxes()
    if outboxes and env.mode == "async":  # frames ack-clocked (outbox.FrameWindow)
        # the page's window is shared out between its sockets; a socket held up by a
        # retransmission stall fills its share and the others carry (LiveSession._show)
        period_ms = 1000 * stream.every / (env.fps * s.speed)
        for outbox in outboxes:
            outbox.clock(delay_ms, period_ms, len(outboxes))
    level, every = stream.level, stream.every
    if not stream.on_ack(delay_ms, now_ms(), run.frames_dropped):
        return
    if stream.level != level:
        await s.worker_call(s.worker.set_quality(stream.level))  # type: ignore[arg-type]
    if stream.every != every:
        await s.worker_call(s.worker.set_stream_every(stream.every))
    s.send({"type": "setting", "quality": stream.level, "stream_every": stream.every,
            "adaptive": True})  # fmt: skip


async def on_pause(s: LiveSession, _msg: p.PauseMsg) -> None:
    """Stop the clock; a pause longer than the study allows abandons the episode.

    Pause and resume set one state: a ``pause`` while paused (a second Esc that crossed the
    first's answer) is answered with ``paused`` again, its countdown left as it runs, and a
    pause that crossed the episode's end is dropped, as an input would be."""
    if s.phase == Phase.paused:
        s.send({"type": "paused", "timeout_s": s.pause_left_s()})
        return
    if s.phase == Phase.ended:
        return
    if s.phase != Phase.playing:
        raise wrong_state(s.phase, "pause")
    if await s.pause_worker():
        s.arm_pause_timer()
        s.send({"type": "paused", "timeout_s": s.spec.pause_timeout_s})


async def on_resume(s: LiveSession, _msg: p.ResumeMsg) -> None:
    """Restart the clock (while playing: answered with ``resumed``, nothing changes)."""
    if s.phase == Phase.playing:
        s.send({"type": "resumed"})
        return
    if s.phase == Phase.ended:
        return  # crossed the episode's end: its save question is on its way
    if s.phase != Phase.paused or s.worker is None:
        raise wrong_state(s.phase, "resume")
    if not await s.resume_clock():
        return
    s.phase = Phase.playing
    s.send({"type": "resumed"})


async def on_cancel(s: LiveSession, _msg: p.CancelMsg) -> None:
    """End the running episode as ``canceled`` (its steps are kept)."""
    if s.phase not in ACTIVE:
        raise wrong_state(s.phase, "cancel")
    await s.stop(EpisodeStatus.canceled, "canceled")


async def on_save(s: LiveSession, msg: p.SaveMsg) -> None:
    """Answer the save question: ``completed`` or ``rejected``."""
    run = s.run
    if s.phase != Phase.ended or run is None:
        raise wrong_state(s.phase, "save")
    if msg.outcome is not None and not s.spec.asks_outcome(run.env_id):
        raise PlayError("not_asked", "this environment does not ask for an outcome")
    if msg.outcome is not None and not msg.keep:
        raise PlayError("invalid", "an outcome goes with keep: true (a kept episode)")
    status = EpisodeStatus.completed if msg.keep else EpisodeStatus.rejected
    await s.finish(run, status, player_outcome=msg.outcome)


async def on_set_speed(s: LiveSession, msg: p.SpeedMsg) -> None:
    """Async clock speed: one of the environment's ``speed_choices`` (none: fixed)."""
    env = s.spec.environment(s.env_id) if s.env_id else None
    if env is None or env.mode != "async" or s.worker is None:
        raise PlayError("not_async", "speed applies to real-time (async) environments only")
    if msg.speed not in env.speed_choices:
        allowed = ", ".join(f"{v:g}" for v in env.speed_choices) or f"{env.speed:g} (fixed)"
        raise PlayError("speed_locked", f"this game's speed is {allowed}")
    await s.worker_call(s.worker.set_speed(msg.speed))
    s.speed = msg.speed
    s.send({"type": "setting", "speed": msg.speed})


async def on_set_quality(s: LiveSession, msg: p.QualityMsg) -> None:
    """JPEG quality of the next frames."""
    if s.worker is not None:
        await s.worker_call(s.worker.set_quality(msg.quality))
    s.quality = msg.quality
    if s.adaptive is not None:  # the player's choice is the adaptive stream's ceiling
        s.adaptive.set_ceiling(msg.quality)
    s.send({"type": "setting", "quality": msg.quality})


async def on_set_camera(s: LiveSession, msg: p.CameraMsg) -> None:
    """Render from another camera."""
    if s.worker is None or msg.camera not in (s.worker.info.get("cameras") or []):
        raise PlayError("unknown_camera", f"no camera {msg.camera!r} here")
    await s.worker_call(s.worker.set_camera(msg.camera))
    s.camera = msg.camera
    s.send({"type": "setting", "camera": msg.camera})


async def on_end_session(s: LiveSession, _msg: p.EndSessionMsg) -> None:
    """End the play session (between episodes)."""
    if s.phase not in (Phase.idle,):
        raise wrong_state(s.phase, "end the session (cancel or save the episode first)")
    await s.shutdown("ended by the player")


HANDLERS: dict[str, Callable[[LiveSession, Any], Awaitable[None]]] = {
    "ping": on_ping, "start": on_start, "go": on_go, "input": on_input, "ack": on_ack,
    "pause": on_pause, "resume": on_resume, "cancel": on_cancel, "save": on_save,
    "set_speed": on_set_speed,
    "set_quality": on_set_quality, "set_camera": on_set_camera, "end_session": on_end_session,
    "phone_pair": on_phone_pair, "phone_confirm": on_phone_confirm,
}  # fmt: skip


async def dispatch(live: LiveSession, msg: Any, outbox: Outbox) -> None:
    """Serve one validated client message; problems go back as ``error`` messages."""
    try:
        async with live.lock:
            if live.phase == Phase.closed:
                raise PlayError("closed", "the session is over")
            await HANDLERS[msg.type](live, msg)
    except PlayError as exc:
        outbox.send({"type": "error", "code": exc.code, "message": exc.message, "for": msg.type,
                     **exc.extra})  # fmt: skip
    except Exception:
        log.exception("player message %s failed in session %s", msg.type, live.id)
        message = "the server could not do this; it has been logged"
        outbox.send({"type": "error", "code": "internal", "for": msg.type, "message": message})
