"""The message size limit on a real uvicorn server (TestClient does not apply ``ws_max_size``)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from server.main import SERVE_OPTIONS
from server.player.protocol import MAX_MESSAGE_BYTES, SUBPROTOCOL
from tests.player.conftest import activate, counter_env, spec


def _ticket(live_server: str, token: str) -> str:
    res = httpx.post(f"{live_server}/api/play/join", json={"token": token, "participant_id": "big"})
    assert res.status_code == 200, res.text
    return str(res.json()["ticket"])


def _ping_of(size: int) -> str:
    """A ``ping`` message (with an unknown ``pad`` field) of exactly ``size`` bytes."""
    empty = json.dumps({"type": "ping", "pad": ""})
    message = json.dumps({"type": "ping", "pad": "x" * (size - len(empty))})
    assert len(message) == size
    return message


async def _send_big(url: str, ticket: str, size: int) -> tuple[list[dict], int | None]:
    """Open a socket, send one ``ping`` of ``size`` bytes; the errors got and the close code."""
    errors: list[dict] = []
    async with websockets.connect(
        url, subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"], max_size=None
    ) as ws:
        assert ws.subprotocol == SUBPROTOCOL
        hello = json.loads(await ws.recv())
        assert hello["type"] == "hello"
        try:
            await ws.send(_ping_of(size))
            while True:
                got = await ws.recv()
                if isinstance(got, str) and json.loads(got)["type"] == "error":
                    errors.append(json.loads(got))
        except websockets.ConnectionClosed:
            pass
        return errors, ws.close_code


@pytest.fixture
def socket_url(live_server, factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    url = live_server.replace("http://", "ws://") + "/ws/play"
    return url, _ticket(live_server, study.permalink_token)


def test_the_server_frame_limit_is_set_close_to_the_documented_one():
    assert MAX_MESSAGE_BYTES == 64 * 1024
    assert MAX_MESSAGE_BYTES < SERVE_OPTIONS["ws_max_size"] <= 2 * MAX_MESSAGE_BYTES


def test_a_message_over_64_kib_gets_too_large_and_1008(socket_url):
    url, ticket = socket_url
    errors, code = asyncio.run(_send_big(url, ticket, MAX_MESSAGE_BYTES + 1))
    assert [e["code"] for e in errors] == ["too_large"] and code == 1008


def test_a_message_over_the_server_cap_is_closed_with_1009_unread(socket_url):
    """Over ``ws_max_size`` uvicorn closes as soon as the frame header names the length."""
    url, ticket = socket_url
    errors, code = asyncio.run(_send_big(url, ticket, 1024 * 1024))
    assert errors == [] and code == 1009


def test_a_message_of_exactly_64_kib_is_read(socket_url):
    url, ticket = socket_url

    async def run() -> list[dict]:
        async with websockets.connect(url, subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"]) as ws:
            await ws.recv()  # hello
            await ws.send(_ping_of(MAX_MESSAGE_BYTES))
            await ws.send(json.dumps({"type": "ping", "client_ms": 1}))
            return [json.loads(await ws.recv()) for _ in range(2)]

    invalid, pong = asyncio.run(run())
    assert invalid["code"] == "invalid" and "pad" in invalid["message"]  # parsed, not refused
    assert pong["type"] == "pong"
