"""The player's WebSocket protocol (``docs/protocol.md``): messages and frame header.

Control messages are JSON text objects with a ``type``; client messages are validated here
with a discriminated union. Frames go server → client as binary messages: a fixed
:data:`FRAME_HEADER` then the JPEG bytes.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024
# The WebSocket subprotocol the server speaks; a participant's socket also offers
# ``ticket.<ticket>`` as a second one (the header keeps tickets out of URLs and access logs).
SUBPROTOCOL = "rlds-studio"
TICKET_PREFIX = "ticket."
# Offered as a further subprotocol: take this participant's session over from another tab.
TAKEOVER = "takeover"


def offered_ticket(offered: Iterable[str]) -> str | None:
    """The ticket a socket offered as a ``ticket.<ticket>`` subprotocol, if any."""
    for protocol in offered:
        if protocol.startswith(TICKET_PREFIX):
            return protocol[len(TICKET_PREFIX) :]
    return None


def chosen_subprotocol(offered: Iterable[str]) -> str | None:
    """The subprotocol the server accepts a play socket with (a browser that offered
    subprotocols fails the socket unless the server picks one)."""
    return SUBPROTOCOL if SUBPROTOCOL in offered else None


# episode index (u32), step index (u32), server time in ms since the epoch (f64),
# episode return so far (f64), who drives (u8: 0 no policy, 1 the player, 2 the policy:
# server/runtime/autonomy.py); network byte order.
FRAME_HEADER = struct.Struct("!IIddB")

# Close codes (RFC 6455 and the 4000-4999 private range).
CLOSE_NORMAL = 1000  # a lane: the page's play socket went away
CLOSE_POLICY = 1008  # abuse: oversize message, flood, too many errors, not allowed
CLOSE_SERVER_ERROR = 1011
CLOSE_REPLACED = 4000  # the same play session was opened on another connection
CLOSE_ENDED = 4001  # the play session is over
CLOSE_OPEN_ELSEWHERE = 4002  # the participant's session is open in another tab


# Every number a client sends is bounded so that whatever the recording keeps fits what the
# RLDS exporter writes (int64 timings in ms, JSON text input) and means something:
# client clock times in ms since the epoch, exactly representable (a float64 holds every
# integer below 2**53, far beyond year 200000); episode and step indices as the frame header
# carries them (uint32).
ClientMs = Annotated[float, Field(ge=0, lt=2**53, allow_inf_nan=False)]
FrameIndex = Annotated[int, Field(ge=0, le=2**32 - 1)]
ButtonIndex = Annotated[int, Field(ge=0, le=63)]  # standard gamepads have 17
ButtonValue = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
AxisValue = Annotated[float, Field(ge=-1, le=1, allow_inf_nan=False)]
# Devices the page reads besides keyboard and gamepad, each normalised to [-1, 1] per axis;
# their buttons travel in ``keys`` as reserved codes (``MouseLeft``, ``SpaceMouseLeft``, ...).
Device = Literal["mouse", "spacemouse", "phone", "touch"]
DeviceAxes = Annotated[list[AxisValue], Field(max_length=8)]


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class InputMsg(_Msg):
    """Keys held (device buttons as reserved codes), gamepad buttons and axes, device axes;
    the client time and the step on screen."""

    type: Literal["input"]
    keys: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=32)
    buttons: dict[ButtonIndex, ButtonValue] = Field(default_factory=dict, max_length=32)
    axes: list[AxisValue] = Field(default_factory=list, max_length=16)
    devices: dict[Device, DeviceAxes] = Field(default_factory=dict)
    client_ms: ClientMs
    seen_step: int = Field(default=-1, ge=-1, le=2**32 - 1)  # -1: no frame on screen yet
    # the page's count of inputs: with lanes each input comes twice, the first copy counts
    seq: int | None = Field(default=None, ge=1, le=2**53)

    def raw(self) -> dict[str, Any]:
        """The raw input as the runtime's input mapping and the recording take it."""
        return {"keys": self.keys, "buttons": self.buttons, "axes": self.axes,
                "devices": self.devices}  # fmt: skip


class AckMsg(_Msg):
    """A frame was drawn on the player's screen (or, ``skipped``, arrived after a newer one
    and was not drawn: with lanes, it settles the frame window of the socket it came over)."""

    type: Literal["ack"]
    episode: FrameIndex
    step: FrameIndex
    drawn_ms: ClientMs
    skipped: bool = False


class StartMsg(_Msg):
    """Start an episode of one of the study's environments."""

    type: Literal["start"]
    env_id: str | None = Field(default=None, min_length=1, max_length=64)
    task_id: str | None = Field(
        default=None, min_length=1, max_length=64,
        description="The task to play, where the environment lets players choose "
        "(task_order: choice); otherwise the task is drawn.",
    )  # fmt: skip


class GoMsg(_Msg):
    """The player is ready: the episode shown behind the ready gate starts."""

    type: Literal["go"]


class PauseMsg(_Msg):
    """Stop the clock (async) and the input."""

    type: Literal["pause"]


class ResumeMsg(_Msg):
    """Continue after a pause."""

    type: Literal["resume"]


class CancelMsg(_Msg):
    """Give up the running episode (``canceled``)."""

    type: Literal["cancel"]


class EndEpisodeMsg(_Msg):
    """The participant is done ("I'm done"): end the running episode here, truncated, and
    ask the save question (environments with ``allow_end``)."""

    type: Literal["end_episode"]


class SaveMsg(_Msg):
    """Answer to ``ask_save``: keep the episode (completed) or not (rejected); with
    ``ask_outcome``, whether the player succeeded (absent or null: skipped)."""

    type: Literal["save"]
    keep: bool
    outcome: Literal["success", "failure"] | None = None


class SpeedMsg(_Msg):
    """Async clock speed factor."""

    type: Literal["set_speed"]
    speed: float = Field(ge=0.05, le=10)


class QualityMsg(_Msg):
    """JPEG quality of the next frames."""

    type: Literal["set_quality"]
    quality: Literal["low", "medium", "high"]


class CameraMsg(_Msg):
    """Render from another of the environment's cameras."""

    type: Literal["set_camera"]
    camera: str = Field(min_length=1, max_length=64)


class PhonePairMsg(_Msg):
    """Show a phone pairing (QR code of ``<origin>/phone.html#ticket=...`` and a code)."""

    type: Literal["phone_pair"]
    origin: str = Field(min_length=8, max_length=200)  # the page's location.origin


class PhoneConfirmMsg(_Msg):
    """Answer to ``phone`` with ``request``: let the new phone replace the connected one."""

    type: Literal["phone_confirm"]
    accept: bool


class EndSessionMsg(_Msg):
    """End the play session."""

    type: Literal["end_session"]


class PingMsg(_Msg):
    """Round trip check; answered with ``pong``."""

    type: Literal["ping"]
    client_ms: ClientMs | None = None


ClientMessage = Annotated[
    InputMsg
    | AckMsg
    | StartMsg
    | GoMsg
    | PauseMsg
    | ResumeMsg
    | CancelMsg
    | EndEpisodeMsg
    | SaveMsg
    | SpeedMsg
    | QualityMsg
    | CameraMsg
    | EndSessionMsg
    | PhonePairMsg
    | PhoneConfirmMsg
    | PingMsg,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(ClientMessage)
CLIENT_TYPES = frozenset(
    m.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
    for m in (InputMsg, AckMsg, StartMsg, GoMsg, PauseMsg, ResumeMsg, CancelMsg, EndEpisodeMsg,
              SaveMsg, SpeedMsg, QualityMsg, CameraMsg, EndSessionMsg, PhonePairMsg,
              PhoneConfirmMsg, PingMsg)
)  # fmt: skip


class BadMessage(ValueError):
    """A client message that cannot be used; ``code`` names the problem, ``for_`` the
    message's type when it is known."""

    def __init__(self, code: str, message: str, for_: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.for_ = for_


def parse_client(text: str) -> Any:
    """One client text message as its model, or :class:`BadMessage`."""
    if len(text.encode()) > MAX_MESSAGE_BYTES:
        raise BadMessage("too_large", f"messages are limited to {MAX_MESSAGE_BYTES} bytes")
    try:
        # Python's json reads NaN and Infinity (not JSON) and 1e400 (as inf): every float
        # field of the models refuses non-finite values, so the error names the field.
        data = json.loads(text)
    except ValueError:
        raise BadMessage("bad_json", "the message is not valid JSON") from None
    except RecursionError:  # "[[[[..." within the size limit
        raise BadMessage("bad_json", "the message is nested too deeply") from None
    if not isinstance(data, dict):
        raise BadMessage("bad_message", "a message must be a JSON object with a 'type'")
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in CLIENT_TYPES:
        raise BadMessage("unknown_type", f"unknown message type {str(kind)[:40]!r}")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or kind
        raise BadMessage("invalid", f"{kind}: {where}: {first['msg']}", for_=kind) from None


def pack_frame(
    episode: int, step: int, server_ms: float, return_: float, jpeg: bytes, control: int = 0
) -> bytes:
    """A binary frame message."""
    return FRAME_HEADER.pack(episode, step, server_ms, return_, control) + jpeg


def unpack_frame(data: bytes) -> tuple[int, int, float, float, bytes]:
    """(episode, step, server_ms, return, jpeg) of a binary frame message."""
    episode, step, server_ms, return_, _ = FRAME_HEADER.unpack_from(data)
    return episode, step, server_ms, return_, data[FRAME_HEADER.size :]


def frame_control(data: bytes) -> int:
    """Who drives at a binary frame: 0 no policy, 1 the player, 2 the policy."""
    return int(FRAME_HEADER.unpack_from(data)[4])
