"""Play over a link like a participant's: a user-space TCP proxy adds delay, jitter, a
bandwidth limit and loss stalls between headless Chromium and the app.

This kernel has no ``netem``, so :class:`WanProxy` emulates the link in user space, each
direction on its own: every chunk read is cut into segments of ``mss`` bytes; a segment
leaves when the link is free (``bandwidth`` serialises them, across all the proxy's
connections: a participant's sockets share one access link), arrives ``rtt / 2`` later
(plus uniform ``jitter``), and with probability ``loss`` one retransmission timeout later
(what a lost TCP segment costs: the receiver waits for the resend, and everything behind it
waits too, since TCP delivers in order). A direction holds at most ``window`` bytes in
flight, then stops reading, so the sender feels backpressure as through a real socket.

The benchmark starts the app (as ``latency.py`` does), puts the proxy in front of it for
each link, plays Atari Pong in async mode at 60 fps with the keyboard through the proxy
with the adaptive stream on (``adaptive_quality``, from ``high``), once stepping at the
clock's ticks, once with ``step_on_input`` (a fresh input steps at once, still one step
per slot), and with two and three lanes (``STUDIO_STREAM_LANES``: frames over three or four
sockets, each input over all; ``--links`` and ``--variants`` choose), and reads input →
frame drawn latency from the episode's own log (``frame_drawn - input_sent``, both on the
browser's clock). Prints JSON: per link and setting p50/p99 latency, the five slowest
inputs, the median of each stage (browser → app, app → applied: the wait for the tick,
applied → frame sent, sent → drawn), the frames the server dropped for a slow client, the
steps played, and the adaptive stream's choices (the share of steps at each JPEG quality
and at each frame rate, down to ``min_stream_fps`` 20, and the share streamed).
``--smoke`` plays a few inputs over one link: it checks the benchmark still runs; its
figures mean nothing.

    .venv/bin/python benchmarks/wan.py [--inputs 120] [--links 50ms,...] \
        [--variants tick,on_input,lanes2,lanes3] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


@dataclass(frozen=True)
class Link:
    """One emulated link; the same in both directions."""

    name: str = "loopback"
    rtt_ms: float = 0.0
    jitter_ms: float = 0.0
    bandwidth_mbit: float | None = None  # per direction; None: unlimited
    loss: float = 0.0  # share of segments that arrive one retransmission timeout late
    rto_ms: float = 200.0  # Linux's minimum retransmission timeout; the stall adds the RTT
    mss: int = 1448
    window: int = 256 * 1024  # bytes in flight per direction before the reader stops
    seed: int = 0


LINKS = (
    Link("50ms", rtt_ms=50, jitter_ms=2),
    Link("50ms_1pct_loss", rtt_ms=50, jitter_ms=2, loss=0.01),
    Link("150ms", rtt_ms=150, jitter_ms=5),
    Link("2mbit", rtt_ms=30, jitter_ms=2, bandwidth_mbit=2.0),
    # narrower than high-quality Pong at 60 fps: the adaptive stream lowers quality, then
    # (min_stream_fps) the frame rate
    Link("1mbit", rtt_ms=30, jitter_ms=2, bandwidth_mbit=1.0),
)


class _Wire:
    """One direction of the participant's access link, shared by all their connections: a
    segment leaves once the segments before it, of any connection, have been sent."""

    def __init__(self) -> None:
        self.free = 0.0  # when the link has sent everything queued (bandwidth)


class _Direction:
    """Segments of one direction of one connection, each released at its arrival time, in
    order."""

    def __init__(
        self, link: Link, rng: random.Random, writer: asyncio.StreamWriter, wire: _Wire
    ) -> None:
        self.link = link
        self.wire = wire
        self.rng = rng
        self.writer = writer
        self.segments: deque[tuple[float, bytes]] = deque()
        self.arrived = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()
        self.in_flight = 0
        self.last_arrival = 0.0  # TCP delivers in order: no segment overtakes another
        self.closed = False
        self.stalls = 0

    def push(self, data: bytes, now: float) -> None:
        link = self.link
        for start in range(0, len(data), link.mss):
            segment = data[start : start + link.mss]
            leaves = now
            if link.bandwidth_mbit:
                leaves = max(now, self.wire.free) + len(segment) * 8 / (link.bandwidth_mbit * 1e6)
                self.wire.free = leaves
            arrives = leaves + link.rtt_ms / 2000
            if link.jitter_ms:
                arrives += self.rng.uniform(-link.jitter_ms, link.jitter_ms) / 1000
            if link.loss and self.rng.random() < link.loss:
                arrives += (link.rto_ms + link.rtt_ms) / 1000
                self.stalls += 1
            arrives = max(arrives, self.last_arrival)
            self.last_arrival = arrives
            self.segments.append((arrives, segment))
            self.in_flight += len(segment)
        if self.in_flight >= link.window:
            self.room.clear()
        self.arrived.set()

    async def pump(self) -> None:
        """Deliver segments at their arrival times; close the far side after the last."""
        loop = asyncio.get_running_loop()
        while True:
            if not self.segments:
                if self.closed:
                    break
                self.arrived.clear()
                await self.arrived.wait()
                continue
            wait = self.segments[0][0] - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            now, due = loop.time(), []
            while self.segments and self.segments[0][0] <= now:
                due.append(self.segments.popleft()[1])
            data = b"".join(due)
            self.in_flight -= len(data)
            if self.in_flight < self.link.window:
                self.room.set()
            self.writer.write(data)
            await self.writer.drain()
        with contextlib.suppress(OSError):
            self.writer.close()


class WanProxy:
    """A TCP proxy on 127.0.0.1 in front of ``target_port``, in a thread of its own."""

    def __init__(self, target_port: int, link: Link) -> None:
        self.target_port = target_port
        self.link = link
        self.port = 0
        self._directions: list[_Direction] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._connections = 0
        self._wires = (_Wire(), _Wire())  # up, down: the bandwidth is the link's, not each socket's

    @property
    def stalls(self) -> int:
        """Segments delayed by a loss stall so far, both directions of every connection."""
        return sum(d.stalls for d in self._directions)

    def __enter__(self) -> WanProxy:
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *_: Any) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._connections += 1
        seed = self.link.seed * 1_000_003 + self._connections
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_w.close()
            return
        up = _Direction(self.link, random.Random(seed), server_w, self._wires[0])
        down = _Direction(self.link, random.Random(seed + 1), client_w, self._wires[1])
        self._directions += [up, down]
        pumps = [asyncio.create_task(d.pump()) for d in (up, down)]
        try:
            await asyncio.gather(self._read(client_r, up), self._read(server_r, down), *pumps)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for task in pumps:
                task.cancel()
            for writer in (client_w, server_w):
                with contextlib.suppress(OSError):
                    writer.close()

    @staticmethod
    async def _read(reader: asyncio.StreamReader, direction: _Direction) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await direction.room.wait()
            data = await reader.read(65536)
            if not data:
                break
            direction.push(data, loop.time())
        direction.closed = True
        direction.arrived.set()


def measure(browser: Any, server: dict[str, Any], link: Link, inputs: int) -> dict[str, Any]:
    """One async Pong episode played through ``link``; figures from its log and row."""
    from latency import latencies, percentile, play, stage_medians, timings_from_log
    from sqlalchemy import create_engine, text

    with WanProxy(server["port"], link) as proxy:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(60_000)
        started = time.monotonic()
        play(page, f"http://127.0.0.1:{proxy.port}", server["token"], "async", inputs,
             participant=f"wan-{link.name}")  # fmt: skip
        elapsed = time.monotonic() - started
        context.close()
        stalls = proxy.stalls
    engine = create_engine(server["database_url"])
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT e.storage_path, e.steps, e.frames_dropped, e.duration_s FROM episodes e "
                 "JOIN participants p ON p.id = e.participant_id WHERE p.external_id = :who"),
            {"who": f"wan-{link.name}"},
        ).one()  # fmt: skip
    engine.dispose()
    timings = timings_from_log(row.storage_path)
    values = latencies(timings)
    p50, p99 = percentile(values, 50), percentile(values, 99)
    return {
        "link": link.name,
        "rtt_ms": link.rtt_ms,
        "loss": link.loss,
        "bandwidth_mbit": link.bandwidth_mbit,
        "inputs_measured": len(values),
        "p50_ms": p50,
        "p99_ms": p99,
        "p50_over_rtt_ms": None if p50 is None else round(p50 - link.rtt_ms, 2),
        "p99_over_rtt_ms": None if p99 is None else round(p99 - link.rtt_ms, 2),
        "worst": _worst(timings, link.rtt_ms),
        "stages_p50_ms": stage_medians(timings),
        "steps": row.steps,
        "frames_dropped": row.frames_dropped,
        "steps_per_s": round(row.steps / row.duration_s, 1) if row.duration_s else None,
        "loss_stalls": stalls,
        "stream": _stream_choices(row.storage_path),
        "seconds": round(elapsed, 1),
    }


def _worst(
    timings: dict[int, dict[str, float]], rtt_ms: float, count: int = 5
) -> list[dict[str, float]]:
    """The ``count`` slowest inputs: over the RTT, and each stage (as in the p50s)."""
    from latency import stages_of

    drawn = sorted(
        (t for t in timings.values() if "frame_drawn" in t),
        key=lambda t: t["frame_drawn"] - t["input_sent"],
    )
    return [
        {"over_rtt_ms": round(t["frame_drawn"] - t["input_sent"] - rtt_ms, 1)}
        | {name: round(ms, 1) for name, ms in stages_of(t).items()}
        for t in drawn[-count:]
    ]


def _stream_choices(path: str) -> dict[str, Any]:
    """The adaptive stream's choices: the share of steps at each JPEG quality, at each
    frame rate (one frame in ``stream_every``), and the share of steps streamed."""
    from server.recording.writer import open_reader

    with open_reader(path) as reader:
        timings = [json.loads(s.custom_data["timing"]) for s in reader.steps]

    def shares(values: list[Any]) -> dict[str, float]:
        return {str(v): round(values.count(v) / len(values), 3) for v in sorted(set(values))}

    return {
        "quality_share": shares([t.get("jpeg_quality") for t in timings]),
        "one_frame_in_share": shares([t.get("stream_every", 1) for t in timings]),
        "streamed_share": round(sum(t.get("streamed", True) for t in timings) / len(timings), 3),
    }


def _variant(name: str) -> tuple[bool, int]:
    """``tick``, ``on_input`` or ``lanesN``: (step_on_input, lanes)."""
    if name in ("tick", "on_input"):
        return name == "on_input", 0
    if name.startswith("lanes") and name[5:].isdigit():
        return True, int(name[5:])
    raise SystemExit(f"unknown variant {name!r}: tick, on_input or lanesN")


def main() -> None:
    from concurrency import PONG, studio_server
    from latency import in_chromium

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=120)
    parser.add_argument("--links", default=",".join(lk.name for lk in LINKS),
                        help="comma-separated link names (default: all)")  # fmt: skip
    parser.add_argument("--variants", default="tick,on_input,lanes2,lanes3",
                        help="comma-separated: tick, on_input, lanesN")  # fmt: skip
    parser.add_argument("--smoke", action="store_true", help="a few inputs over one link")
    args = parser.parse_args()
    # (step_on_input, lanes): the clock's tick, a step as each input arrives, then with it
    # frames over 1 + N sockets and each input over all (docs/protocol.md, "Lanes")
    links = tuple(lk for lk in LINKS if lk.name in args.links.split(","))
    variants = tuple(_variant(v) for v in args.variants.split(","))
    if args.smoke:
        args.inputs, links, variants = 4, (replace(LINKS[1], loss=0.05),), ((True, 2),)
    results = []
    for step_on_input, lanes in variants:
        # the adaptive stream on, from high quality down: what each link ends up carrying
        env = {**PONG, "mode": "async", "image_quality": "high", "adaptive_quality": True,
               "min_stream_fps": 20, "step_on_input": step_on_input}  # fmt: skip
        with studio_server(env, server_env={"STUDIO_STREAM_LANES": str(lanes)}) as server:
            played = in_chromium(lambda b: [measure(b, server, lk, args.inputs) for lk in links])
        results += [{"step_on_input": step_on_input, "lanes": lanes, **r} for r in played]
    print(json.dumps({"benchmark": "wan_latency", "env": "ALE/Pong-v5 async 60 fps, Chromium",
                      "results": results, "smoke": args.smoke}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
