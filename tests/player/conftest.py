"""Player test helpers: studies on real envs, a protocol client over TestClient sockets."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from sqlalchemy.orm import Session

from server.models import Episode, Study, StudyState, User
from server.player.protocol import SUBPROTOCOL, frame_control, unpack_frame
from server.services.studies import studies
from tests.factories import Factory

FAKE = "tests.runtime.fake_envs"


def counter_env(env_id: str = "counter", **kwargs: Any) -> dict[str, Any]:
    """A study environment on the runtime's fake counter env (sync, keys A/B)."""
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k in {"mode", "fps", "seeds",
             "episodes_per_participant", "episodes_total", "max_steps"}}  # fmt: skip
    return {
        "id": env_id,
        "name": env_id.title(),
        "source": {"kind": "dm_env", "factory": f"{FAKE}:counter", "kwargs": kwargs},
        "controls": {"keys": {"KeyA": 1, "KeyB": 2}, "noop": 0, "labels": {"KeyA": "one"}},
        "instructions": "Press **A**.",
        **extra,
    }


def spec(*envs: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A study spec with these environments."""
    return {"name": "Player test", "instructions": "# Hi\n<script>x</script>",
            "environments": list(envs), **fields}  # fmt: skip


def activate(db: Session, study: Study) -> Study:
    """Make a study active (it gets a permalink token)."""
    return studies.change_state(db, study, StudyState.active)


def ticket_socket(client: Any, ticket: str, query: str = "") -> Any:
    """A participant's socket: the ticket rides in the Sec-WebSocket-Protocol header."""
    url = f"/ws/play?{query}" if query else "/ws/play"
    return client.websocket_connect(url, subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"])


def row_of(db, episode_id):
    """The episode row as the database has it now."""
    row = db.get(Episode, episode_id)
    db.refresh(row)
    return row


def wait_status(db, episode_id, status, seconds=15.0):
    """Poll until the episode has ``status`` (the app writes it from another thread)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        row = row_of(db, episode_id)
        if row.status == status:
            return row
        time.sleep(0.05)
    raise AssertionError(f"episode is {row.status}, expected {status}")


class Player:
    """A protocol client on a TestClient WebSocket session."""

    def __init__(self, ws: Any, auto_go: bool = True) -> None:
        self.ws = ws
        self.frames: list[tuple[int, int, float, float, bytes]] = []
        self.controls: list[int] = []  # each frame's control byte (shared autonomy)
        self.seen: list[dict[str, Any]] = []
        # pass every ready gate at once (tests of the gate itself turn this off)
        self.auto_go = auto_go

    def send(self, **message: Any) -> None:
        self.ws.send_text(json.dumps(message))

    def receive(self) -> dict[str, Any] | tuple[int, int, float, float, bytes]:
        message = self.ws.receive()
        if message["type"] == "websocket.close":
            raise ConnectionError(message.get("code"))
        if message.get("bytes") is not None:
            frame = unpack_frame(message["bytes"])
            self.frames.append(frame)
            self.controls.append(frame_control(message["bytes"]))
            return frame
        data = json.loads(message["text"])
        self.seen.append(data)
        if self.auto_go and data["type"] == "episode_started" and data.get("ready_gate"):
            self.send(type="go")
        return data

    def until(self, kind: str, limit: int = 2000) -> dict[str, Any]:
        """Messages until one of ``kind`` (frames are kept in ``frames``)."""
        for _ in range(limit):
            got = self.receive()
            if isinstance(got, dict) and got["type"] == kind:
                return got
        raise AssertionError(f"no {kind!r} message")

    def frame(self) -> tuple[int, int, float, float, bytes]:
        """The next frame (control messages are kept in ``seen``)."""
        for _ in range(200):
            got = self.receive()
            if isinstance(got, tuple):
                return got
        raise AssertionError("no frame")

    def start(self, env_id: str = "counter") -> dict[str, Any]:
        """A fresh socket: hello, ``start``, the episode and its first frame."""
        self.until("hello")
        self.send(type="start", env_id=env_id)
        episode = self.until("episode_started")["episode"]
        self.frame()
        return dict(episode)

    def step(self, keys: list[str], client_ms: float = 1000.0) -> tuple[Any, ...]:
        """Sync mode: one input, its frame, and the ack of that frame."""
        seen = self.frames[-1][1] if self.frames else -1
        self.send(type="input", keys=keys, client_ms=client_ms, seen_step=seen)
        frame = self.frame()
        self.send(type="ack", episode=frame[0], step=frame[1], drawn_ms=client_ms + 5)
        return frame


@pytest.fixture
def designer(factory: Factory) -> User:
    return factory.user()
