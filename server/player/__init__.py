"""The player: WebSocket protocol, live play sessions and their connections."""
