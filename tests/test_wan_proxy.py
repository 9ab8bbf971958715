"""The WAN link emulator of benchmarks/wan.py: what it delays, it delays by at least the
link's figures, and it delivers every byte in order. (Lower bounds only: a busy machine
adds time, never removes it.)"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator

import pytest

from benchmarks.wan import Link, WanProxy


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A TCP echo server on loopback, in a thread."""
    loop = asyncio.new_event_loop()

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = loop.run_until_complete(asyncio.start_server(echo, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield int(server.sockets[0].getsockname()[1])
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def _round_trips(port: int, payloads: list[bytes]) -> tuple[list[float], list[bytes]]:
    """Send each payload, wait for all of it to come back: seconds each, bytes received."""

    async def run() -> tuple[list[float], list[bytes]]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        times, got = [], []
        for payload in payloads:
            started = time.monotonic()
            writer.write(payload)
            await writer.drain()
            got.append(await asyncio.wait_for(reader.readexactly(len(payload)), 30))
            times.append(time.monotonic() - started)
        writer.close()
        return times, got

    return asyncio.run(run())


def test_delay_adds_the_round_trip_each_way(echo_port):
    with WanProxy(echo_port, Link("100ms", rtt_ms=100)) as proxy:
        times, got = _round_trips(proxy.port, [b"ping"] * 5)
    assert got == [b"ping"] * 5
    # the echo crosses the link there (rtt / 2) and back (rtt / 2)
    assert min(times) >= 0.1 - 0.002


def test_bandwidth_serialises_what_is_sent(echo_port):
    payload = os.urandom(125_000)  # 1 Mbit
    with WanProxy(echo_port, Link("2mbit", bandwidth_mbit=2.0)) as proxy:
        (seconds,), (got,) = _round_trips(proxy.port, [payload])
    assert got == payload
    assert seconds >= 0.5 - 0.01  # 1 Mbit at 2 Mbit/s (the way back overlaps the way there)


def test_connections_share_the_links_bandwidth(echo_port):
    # one participant's sockets (the play socket and its lanes) share one access link
    payload = os.urandom(125_000)
    with WanProxy(echo_port, Link("2mbit", bandwidth_mbit=2.0)) as proxy:

        async def both() -> list[tuple[list[float], list[bytes]]]:
            return list(await asyncio.gather(*(
                asyncio.to_thread(_round_trips, proxy.port, [payload]) for _ in range(2)
            )))  # fmt: skip

        started = time.monotonic()
        results = asyncio.run(both())
        seconds = time.monotonic() - started
    assert [got for _, (got,) in results] == [payload, payload]
    assert seconds >= 1.0 - 0.01  # 2 Mbit over one 2 Mbit/s link, not 0.5 s each side by side


def test_loss_stalls_by_a_retransmission_timeout_and_keeps_order(echo_port):
    link = Link("lossy", rtt_ms=20, jitter_ms=5, loss=1.0, rto_ms=150)
    with WanProxy(echo_port, link) as proxy:
        times, got = _round_trips(proxy.port, [b"a" * 10, b"b" * 10])
        stalls = proxy.stalls
    assert got == [b"a" * 10, b"b" * 10]
    # there and back: the RTT, plus a stall of RTO + RTT each way (± jitter each way)
    assert min(times) >= 0.02 + 2 * (0.15 + 0.02) - 0.012
    assert stalls >= 4


def test_jitter_never_reorders_bytes(echo_port):
    payload = os.urandom(400_000)
    link = Link("jittery", rtt_ms=10, jitter_ms=8, loss=0.05, rto_ms=20)
    with WanProxy(echo_port, link) as proxy:
        _, (got,) = _round_trips(proxy.port, [payload])
    assert got == payload
