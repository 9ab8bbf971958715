"""What the player page sends over its sockets, as a test reads it off the wire."""

from __future__ import annotations

import json

from playwright.sync_api import Page


def sent_types(page: Page) -> list[str]:
    """The types of the control messages the page sends, as it sends them (a live list)."""
    sent: list[str] = []

    def on_socket(ws):  # type: ignore[no-untyped-def]
        def on_frame(payload):  # type: ignore[no-untyped-def]
            if isinstance(payload, str):
                sent.append(json.loads(payload)["type"])

        ws.on("framesent", on_frame)

    page.on("websocket", on_socket)
    return sent
