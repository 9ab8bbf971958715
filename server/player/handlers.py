"""One handler per client message type: each takes the validated message
(:mod:`server.player.protocol`) and calls one method of the live session, under its lock.

The session raises :class:`PlayError` for a message that cannot be served now (the
connection answers with an ``error`` message naming it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from server.player import protocol as p
from server.player.outbox import Outbox
from server.player.session import LiveSession, PlayError
from server.recording.format import now_ms

log = logging.getLogger(__name__)


async def on_ping(s: LiveSession, msg: p.PingMsg) -> None:
    """Answer with the server time."""
    s.send({"type": "pong", "client_ms": msg.client_ms, "server_ms": now_ms()})


async def on_start(s: LiveSession, msg: p.StartMsg) -> None:
    """Start an episode of one environment (a worker is started or reused).

    Participants: consent first; in a ``balanced`` study the assigned environment (``env_id``
    may be left out); never a finished, full or failed one (quotas are checked again,
    atomically, when the episode row is made). The episode is reserved before any worker is
    built, so a refused start answers at once.
    """
    await s.start(msg.env_id, msg.task_id)


async def on_go(s: LiveSession, _msg: p.GoMsg) -> None:
    """Past the ready gate: the episode starts (async: its clock runs)."""
    await s.go()


async def on_input(s: LiveSession, msg: p.InputMsg) -> None:
    """Sync: step with the input. Async: hold it for the next tick."""
    timing = {"input_sent": msg.client_ms, "input_recv": now_ms(), "seen_step": msg.seen_step}
    await s.input(msg.raw(), msg.seq, timing)


async def on_ack(s: LiveSession, msg: p.AckMsg) -> None:
    """Record that a frame was drawn; report latency now and then."""
    await s.ack(msg)


async def on_pause(s: LiveSession, _msg: p.PauseMsg) -> None:
    """Stop the clock; a pause longer than the study allows abandons the episode.

    Pause and resume set one state: a ``pause`` while paused (a second Esc that crossed the
    first's answer) is answered with ``paused`` again, its countdown left as it runs, and a
    pause that crossed the episode's end is dropped, as an input would be."""
    await s.pause()


async def on_resume(s: LiveSession, _msg: p.ResumeMsg) -> None:
    """Restart the clock."""
    await s.resume()


async def on_cancel(s: LiveSession, _msg: p.CancelMsg) -> None:
    """End the running episode as ``canceled`` (its steps are kept)."""
    await s.cancel()


async def on_end_episode(s: LiveSession, _msg: p.EndEpisodeMsg) -> None:
    """The participant is done: the episode ends here (truncated) and the save question
    follows, as at an ending; refused before its first step, twice, or where the environment
    does not allow it (docs/protocol.md, "Ending an episode")."""
    await s.end_episode()


async def on_save(s: LiveSession, msg: p.SaveMsg) -> None:
    """Answer the save question: ``completed`` or ``rejected``."""
    await s.save(msg.keep, msg.outcome)


async def on_set_speed(s: LiveSession, msg: p.SpeedMsg) -> None:
    """Async clock speed: one of the environment's ``speed_choices`` (none: fixed)."""
    await s.setting("speed", msg.speed)


async def on_set_quality(s: LiveSession, msg: p.QualityMsg) -> None:
    """JPEG quality of the next frames."""
    await s.setting("quality", msg.quality)


async def on_set_camera(s: LiveSession, msg: p.CameraMsg) -> None:
    """Render from another camera."""
    await s.setting("camera", msg.camera)


async def on_end_session(s: LiveSession, _msg: p.EndSessionMsg) -> None:
    """End the play session (between episodes)."""
    await s.end_session()


async def on_phone_pair(s: LiveSession, msg: p.PhonePairMsg) -> None:
    """A new pairing for the panel: a QR code of the phone page's address and a code."""
    await s.phone_pair(msg.origin)


async def on_phone_confirm(s: LiveSession, msg: p.PhoneConfirmMsg) -> None:
    """Let a second phone replace the connected one (or refuse it)."""
    s.phone_confirm(msg.accept)


HANDLERS: dict[str, Callable[[LiveSession, Any], Awaitable[None]]] = {
    "ping": on_ping, "start": on_start, "go": on_go, "input": on_input, "ack": on_ack,
    "pause": on_pause, "resume": on_resume, "cancel": on_cancel, "save": on_save,
    "end_episode": on_end_episode,
    "set_speed": on_set_speed,
    "set_quality": on_set_quality, "set_camera": on_set_camera, "end_session": on_end_session,
    "phone_pair": on_phone_pair, "phone_confirm": on_phone_confirm,
}  # fmt: skip


async def dispatch(live: LiveSession, msg: Any, outbox: Outbox) -> None:
    """Serve one validated client message; problems go back as ``error`` messages."""
    try:
        await live.serve(lambda: HANDLERS[msg.type](live, msg))
    except PlayError as exc:
        outbox.send({"type": "error", "code": exc.code, "message": exc.message, "for": msg.type,
                     **exc.extra})  # fmt: skip
    except Exception:
        log.exception("player message %s failed in session %s", msg.type, live.id)
        message = "the server could not do this; it has been logged"
        outbox.send({"type": "error", "code": "internal", "for": msg.type, "message": message})
