"""The player's WebSocket protocol (``docs/protocol.md``): messages and frame header.

Control messages are JSON text objects with a ``type``; client messages are validated here
with a discriminated union. Frames go server → client as binary messages: a fixed
:data:`FRAME_HEADER` then the JPEG bytes.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024

# episode index (u32), step index (u32), server time in ms since the epoch (f64),
# episode return so far (f64); network byte order.
FRAME_HEADER = struct.Struct("!IIdd")

# Close codes (RFC 6455 and the 4000-4999 private range).
CLOSE_POLICY = 1008  # abuse: oversize message, flood, too many errors, not allowed
CLOSE_SERVER_ERROR = 1011
CLOSE_REPLACED = 4000  # the same play session was opened on another connection
CLOSE_ENDED = 4001  # the play session is over


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputMsg(_Msg):
    """Keys held, gamepad buttons and axes; the client time and the step on screen."""

    type: Literal["input"]
    keys: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=32)
    buttons: dict[int, float] = Field(default_factory=dict, max_length=32)
    axes: list[float] = Field(default_factory=list, max_length=16)
    client_ms: float = Field(ge=0)
    seen_step: int = Field(default=-1, ge=-1)

    @field_validator("axes")
    @classmethod
    def _finite(cls, v: list[float]) -> list[float]:
        if not all(math.isfinite(x) and -1.0 <= x <= 1.0 for x in v):
            raise ValueError("axes must be numbers within [-1, 1]")
        return v

    def raw(self) -> dict[str, Any]:
        """The raw input as the runtime's input mapping and the recording take it."""
        return {"keys": self.keys, "buttons": self.buttons, "axes": self.axes}


class AckMsg(_Msg):
    """A frame was drawn on the player's screen."""

    type: Literal["ack"]
    episode: int = Field(ge=0)
    step: int = Field(ge=0)
    drawn_ms: float = Field(ge=0)


class StartMsg(_Msg):
    """Start an episode of one of the study's environments."""

    type: Literal["start"]
    env_id: str = Field(min_length=1, max_length=64)


class PauseMsg(_Msg):
    """Stop the clock (async) and the input."""

    type: Literal["pause"]


class ResumeMsg(_Msg):
    """Continue after a pause."""

    type: Literal["resume"]


class CancelMsg(_Msg):
    """Give up the running episode (``canceled``)."""

    type: Literal["cancel"]


class SaveMsg(_Msg):
    """Answer to ``ask_save``: keep the episode (completed) or not (rejected)."""

    type: Literal["save"]
    keep: bool


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


class EndSessionMsg(_Msg):
    """End the play session."""

    type: Literal["end_session"]


class PingMsg(_Msg):
    """Round trip check; answered with ``pong``."""

    type: Literal["ping"]
    client_ms: float | None = None


ClientMessage = Annotated[
    InputMsg
    | AckMsg
    | StartMsg
    | PauseMsg
    | ResumeMsg
    | CancelMsg
    | SaveMsg
    | SpeedMsg
    | QualityMsg
    | CameraMsg
    | EndSessionMsg
    | PingMsg,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(ClientMessage)
CLIENT_TYPES = frozenset(
    m.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
    for m in (InputMsg, AckMsg, StartMsg, PauseMsg, ResumeMsg, CancelMsg, SaveMsg, SpeedMsg,
              QualityMsg, CameraMsg, EndSessionMsg, PingMsg)
)  # fmt: skip


class BadMessage(ValueError):
    """A client message that cannot be used; ``code`` names the problem."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_client(text: str) -> Any:
    """One client text message as its model, or :class:`BadMessage`."""
    if len(text.encode()) > MAX_MESSAGE_BYTES:
        raise BadMessage("too_large", f"messages are limited to {MAX_MESSAGE_BYTES} bytes")
    try:
        data = json.loads(text)
    except ValueError:
        raise BadMessage("bad_json", "the message is not valid JSON") from None
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
        raise BadMessage("invalid", f"{kind}: {where}: {first['msg']}") from None


def pack_frame(episode: int, step: int, server_ms: float, return_: float, jpeg: bytes) -> bytes:
    """A binary frame message."""
    return FRAME_HEADER.pack(episode, step, server_ms, return_) + jpeg


def unpack_frame(data: bytes) -> tuple[int, int, float, float, bytes]:
    """(episode, step, server_ms, return, jpeg) of a binary frame message."""
    episode, step, server_ms, return_ = FRAME_HEADER.unpack_from(data)
    return episode, step, server_ms, return_, data[FRAME_HEADER.size :]
