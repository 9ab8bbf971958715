"""The adaptive stream: the JPEG quality a player's link can carry, chosen from its acks.

Only what is streamed adapts: the worker records the observation itself, whatever the
quality, and the environment keeps its pace. Each frame's *ack delay* is measured on the
server's clock alone (frame handed to the socket → its ack back), so no client clock enters.
A link falling behind shows as frames the server had to drop for this player, or as ack
delays well above the best one seen (the link's round trip plus drawing). Then the quality
goes one level down; after :data:`RAISE_AFTER_S` without trouble, one level back up, never
above the ceiling (the environment's ``image_quality``, or what the player chose).

Where the environment allows it (``min_stream_fps``), a link still falling behind at ``low``
quality gets fewer frames: every 2nd, then every 3rd, … step's frame, down to that rate;
a calm link first gets its frames back, then its quality.
"""

from __future__ import annotations

import statistics

LEVELS = ("low", "medium", "high")
WINDOW_MS = 1000.0  # one decision per window at most
LAG_MS = 120.0  # median ack delay this far above the best one: the link is queueing
RAISE_AFTER_S = 5.0  # a quiet link this long earns one level back


class QualityController:
    """One player's stream: a quality between ``low`` and ``ceiling``, and every how many
    steps a frame is streamed (1 to ``max_every``)."""

    def __init__(self, ceiling: str, env_id: str = "", max_every: int = 1) -> None:
        self.env_id = env_id
        self.ceiling = ceiling
        self.level = ceiling
        self.max_every = max_every
        self.every = 1
        self.best_ms: float | None = None
        self.delays: list[float] = []
        self.window_start: float | None = None
        self.dropped_at_window = 0
        self.calm_since: float | None = None

    def set_ceiling(self, ceiling: str) -> None:
        """The player chose a quality: it is the new ceiling and the current level."""
        self.ceiling = self.level = ceiling
        self.calm_since = None

    def on_ack(self, delay_ms: float, now_ms: float, dropped: int) -> bool:
        """An ack ``delay_ms`` after its frame was sent; ``dropped``: frames dropped for
        this player so far. True when ``level`` or ``every`` changed."""
        if delay_ms < 0:
            return False
        self.best_ms = delay_ms if self.best_ms is None else min(self.best_ms, delay_ms)
        if self.window_start is None:
            self.window_start, self.dropped_at_window = now_ms, dropped
            self.calm_since = now_ms
        self.delays.append(delay_ms)
        if now_ms - self.window_start < WINDOW_MS:
            return False
        lagging = statistics.median(self.delays) > self.best_ms + LAG_MS
        congested = lagging or dropped > self.dropped_at_window
        self.window_start, self.dropped_at_window, self.delays = now_ms, dropped, []
        index, top = LEVELS.index(self.level), LEVELS.index(self.ceiling)
        if congested:
            self.calm_since = now_ms
            if index > 0:
                self.level = LEVELS[index - 1]
                return True
            if self.every < self.max_every:
                self.every += 1
                return True
            return False
        assert self.calm_since is not None
        if now_ms - self.calm_since < RAISE_AFTER_S * 1000:
            return False
        if self.every > 1:
            self.every -= 1
        elif index < top:
            self.level = LEVELS[index + 1]
        else:
            return False
        self.calm_since = now_ms
        return True
