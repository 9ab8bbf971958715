"""Every installed catalog environment plays through the real server, as people play it.

One uvicorn server (uvloop, like production), one designer test-playing every installed
catalog entry at once, plus MiniGrid 16×16 and a 1024×1024 frame of ours in both modes:
the ready gate, 200 inputs at a human's pace (one every 250 ms), a pause and a resume, 200
inputs flat out (sync: the next input as soon as the frame arrives, within the server's
120 inputs/s; async: a 60 Hz gamepad),
every episode the environment ends saved and the next one started, the last one canceled.
Afterwards every episode's row holds as many steps as its log. No timing is asserted: a slow
machine plays slower, it must not fail.

An optional suite's entries join this test in the run where the suite is installed.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import websockets

from server.models import EpisodeStatus
from server.player.protocol import SUBPROTOCOL, unpack_frame
from server.recording.writer import open_reader
from server.runtime.catalog import CATALOG
from tests.player.conftest import row_of, spec

ON_POSTGRES = False  # the runtime under play; the rows' queries run on PostgreSQL elsewhere
# Eight games at once, flat out: beside other tests on two cores their workers starve (make
# test runs it once the others are done, tests/run_suites.sh).
# alone; its hang guard past the suite's 300 s: every catalog game at a human's pace takes
# 250-320 s on this VM (a hang is still caught: REPLY_S without a message fails a game)
pytestmark = [pytest.mark.alone, pytest.mark.timeout(900)]
HUMAN_INPUTS = 200
HUMAN_PACE_S = 0.25
FULL_INPUTS = 200
PAD_PACE_S = 1 / 60  # async flat out: a gamepad polled at 60 Hz
KEY_PACE_S = 1 / 100  # sync flat out: the next input once the frame is in, within the limit
REPLY_S = 60.0  # no message for this long: the game is stuck (the old pipe hung forever)
# Games played at once: all of them together need more than two cores (Box2D's renders at
# 50 fps alone take one), and a starved worker is a slow machine, not what this tests.
AT_ONCE = 8
FAKE = "tests.runtime.fake_envs"


def _catalog_env(key: str) -> dict[str, Any]:
    entry = CATALOG[key]
    # The catalog's source, mode, fps and controls, as the editor adds an entry.
    return {"id": "game", "name": key, "source": entry.source().model_dump(),
            "mode": entry.mode, "fps": entry.fps}  # fmt: skip


def _big_frame(mode: str) -> dict[str, Any]:
    # 1024×1024 frames, their top tenth fresh noise every step (a 100-200 KB JPEG), and a
    # 64×64 observation so that the test's logs stay small.
    kwargs = {"size": 1024, "noise": 0.1, "obs_size": 64}
    return {"id": "game", "name": f"Big frame {mode}", "mode": mode, "fps": 10,
            "source": {"kind": "dm_env", "factory": f"{FAKE}:big_frame", "kwargs": kwargs},
            "controls": {"keys": {"KeyA": 1, "KeyB": 2}, "noop": 0}}  # fmt: skip


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    """Eight games at once beside the rest of ``make test`` on two cores: a MuJoCo step may
    wait longer than the default 10 s for a core, and a worker that misses its reply is
    killed (what this test checks is that every game plays, not how busy the machine is)."""
    return settings.model_copy(update={"worker_timeout_s": 60.0})


def _cases() -> dict[str, dict[str, Any]]:
    cases = {key: _catalog_env(key) for key, entry in CATALOG.items() if entry.installed()}
    cases["MiniGrid-Empty-16x16-async"] = {**_catalog_env("MiniGrid-Empty-16x16"),
                                           "mode": "async", "fps": 10}  # fmt: skip
    cases["BigFrame-1024-sync"] = _big_frame("sync")
    cases["BigFrame-1024-async"] = _big_frame("async")
    return cases


def _interleaved(names: list[str]) -> list[str]:
    """One of each suite in turn, so that the heavy ones (Box2D) do not all play together."""
    by_suite: dict[str, list[str]] = {}
    for name in names:
        by_suite.setdefault(CATALOG[name].suite if name in CATALOG else "ours", []).append(name)
    order: list[str] = []
    while len(order) < len(names):
        order += [suite.pop(0) for suite in by_suite.values() if suite]
    return order


@dataclass
class Player:
    """One protocol client: a reader task acks every frame drawn, the game loop plays."""

    name: str
    ws: Any
    mode: str = "sync"
    keys: list[str] = field(default_factory=list)
    control: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    frame: asyncio.Event = field(default_factory=asyncio.Event)
    step: int = -1
    frames: int = 0
    largest_frame: int = 0
    ended: dict[str, Any] | None = None  # the episode_ended message not answered yet
    episodes: dict[str, str] = field(default_factory=dict)  # id → status said by the server
    current: str | None = None
    # the reader's own view, in the server's order: an episode ended and no new one started
    # (``ended`` is cleared by the player as it saves, maybe before a crossed reply arrives)
    between: bool = False
    errors: list[dict[str, Any]] = field(default_factory=list)
    # the last control messages the reader saw (dropped ones too), for a timeout's message
    seen: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=12)
    )

    async def read(self) -> None:
        async for message in self.ws:
            if isinstance(message, bytes):
                episode, step, _, _, jpeg = unpack_frame(message)
                self.step, self.frames = step, self.frames + 1
                self.largest_frame = max(self.largest_frame, len(jpeg))
                ack = {"type": "ack", "episode": episode, "step": step, "drawn_ms": _ms()}
                await self.ws.send(json.dumps(ack))
                self.frame.set()
                continue
            data = json.loads(message)
            self.seen.append(data)
            if data["type"] in ("episode_ended", "episode_started"):
                self.between = data["type"] == "episode_ended"
                if self.between:
                    self.ended = data
            elif self._crossed_the_end(data):
                continue  # a pause, resume or cancel sent as the game ended: they crossed
            elif data["type"] in ("error", "episode_failed"):
                self.errors.append(data)
            await self.control.put(data)
            self.frame.set()  # a sync input answered by the episode's end, not a frame

    def _crossed_the_end(self, data: dict[str, Any]) -> bool:
        late = data["type"] == "error" and data.get("for") in ("pause", "resume", "cancel")
        return late and self.between and data["code"] == "wrong_state"

    async def _next(self, waiting_for: tuple[str, ...]) -> dict[str, Any]:
        """The next control message; on a timeout, says who waited for what after what."""
        try:
            return await asyncio.wait_for(self.control.get(), REPLY_S)
        except TimeoutError:
            raise AssertionError(
                f"{self.name}: no {' or '.join(waiting_for)} within {REPLY_S} s; "
                f"step {self.step}, ended={self.ended is not None}, between={self.between}; "
                f"last messages: {[m.get('type') for m in self.seen]} {list(self.seen)[-3:]}"
            ) from None

    async def until(self, kind: str) -> dict[str, Any]:
        while True:
            data = await self._next((kind,))
            if data["type"] == kind:
                return data
            assert data["type"] not in ("error", "episode_failed"), (self.name, data)

    async def begin(self) -> None:
        await self.send(type="start", env_id="game")
        started = await self.until("episode_started")
        self.current = started["episode"]["id"]
        if started.get("ready_gate"):
            await self.send(type="go")

    async def next_episode(self) -> None:
        """Save the episode the environment ended, then start the next one."""
        self.ended = None
        await self.send(type="save", keep=True)
        saved = await self.until("episode_saved")
        self.episodes[saved["episode_id"]] = saved["status"]
        await self.begin()

    async def press(self, keys: list[str]) -> None:
        if self.ended is not None:
            await self.next_episode()
        self.frame.clear()
        await self.send(type="input", keys=keys, client_ms=_ms(), seen_step=self.step)
        if self.mode == "sync":
            await asyncio.wait_for(self.frame.wait(), REPLY_S)

    async def pause_and_resume(self) -> None:
        if self.ended is not None:
            await self.next_episode()
        await self.send(type="pause")
        got = await self._either("paused", "episode_ended")
        if got["type"] == "episode_ended":  # the game ended first: pause the next one
            await self.next_episode()
            await self.send(type="pause")
            await self.until("paused")
        await asyncio.sleep(0.3)
        if self.ended is None:  # a step on its way as the clock stopped may end the game
            await self.send(type="resume")
            await self._either("resumed", "episode_ended")

    async def _either(self, *kinds: str) -> dict[str, Any]:
        while True:
            data = await self._next(kinds)
            if data["type"] in kinds:
                return data
            assert data["type"] != "episode_failed", (self.name, data)  # no 60 s wait for it

    async def finish(self) -> None:
        if self.ended is not None:
            await self.next_episode()
        await self.send(type="cancel")
        got = await self._either("episode_saved", "episode_ended")
        if got["type"] == "episode_ended":  # ended before the cancel arrived: save it
            self.ended = None
            await self.send(type="save", keep=True)
            got = await self.until("episode_saved")
        self.episodes[got["episode_id"]] = got["status"]

    async def send(self, **message: Any) -> None:
        await self.ws.send(json.dumps(message))


def _ms() -> float:
    return time.time() * 1000


async def _play(name: str, url: str, headers: dict[str, str]) -> Player:
    async with websockets.connect(
        url, subprotocols=[SUBPROTOCOL], additional_headers=headers, max_size=None
    ) as ws:
        player = Player(name, ws)
        reader = asyncio.create_task(player.read())
        try:
            await player.until("hello")
            await player.send(type="start", env_id="game")
            env = await player.until("env_ready")
            player.mode, player.keys = env["mode"], list(env["controls"]["keys"])
            started = await player.until("episode_started")
            player.current = started["episode"]["id"]
            assert started["ready_gate"], name
            await player.send(type="go")
            keys = itertools.cycle([[k] for k in player.keys] + [[]])
            for _ in range(HUMAN_INPUTS):
                await player.press(next(keys))
                await asyncio.sleep(HUMAN_PACE_S)
            await player.pause_and_resume()
            for _ in range(FULL_INPUTS):
                await asyncio.gather(
                    player.press(next(keys)),
                    asyncio.sleep(PAD_PACE_S if player.mode == "async" else KEY_PACE_S),
                )
            await player.finish()
        finally:
            reader.cancel()
    return player


def test_every_catalog_game_plays_at_human_pace_and_flat_out(factory, designer, db, live_server):
    cases = _cases()
    assert {"MiniGrid-FourRooms", "MiniGrid-Empty-16x16", "Pong", "CartPole"} <= set(cases)
    studies = {name: factory.study(designer, spec(env)) for name, env in cases.items()}
    client = factory.client(designer)
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in client.cookies.items()),
               "Origin": live_server}  # fmt: skip
    base = live_server.replace("http", "ws", 1)

    async def everyone() -> list[Player]:
        seats = asyncio.Semaphore(AT_ONCE)

        async def play(name: str) -> Player:
            async with seats:
                return await _play(name, f"{base}/ws/play?study={studies[name].id}", headers)

        order = _interleaved(list(cases))
        return list(await asyncio.gather(*(play(name) for name in order)))

    players = asyncio.run(everyone())
    for player in players:
        assert player.errors == [], (player.name, player.errors)
        # sync: a frame per input at least; async: as many as the machine's pace allowed
        # (a starved worker steps slower: no timing is asserted)
        assert player.frames >= (HUMAN_INPUTS if player.mode == "sync" else 1), player.name
        assert player.episodes and set(player.episodes.values()) <= {"completed", "canceled"}
        for episode_id, status in player.episodes.items():
            row = row_of(db, episode_id)
            assert row.status == EpisodeStatus(status), player.name
            with open_reader(row.storage_path) as reader:
                assert len(reader.steps) == row.steps > 0, (player.name, episode_id)
    big = {p.name: p.largest_frame for p in players if p.name.startswith("BigFrame")}
    assert min(big.values()) > 64 * 1024  # frames far over the 16 KiB that used to hang
    summary = {p.name: {"episodes": len(p.episodes), "frames": p.frames} for p in players}
    print(json.dumps(summary))
