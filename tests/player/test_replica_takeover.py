"""A replica that stalled past the heartbeat bound: another one abandoned its episode."""

from __future__ import annotations

from sqlalchemy import update

from server.models import Episode, EpisodeStatus
from server.services.live.replicas import REPLICA_LOST
from tests.player.conftest import Player, counter_env, row_of, spec


def test_an_episode_closed_by_another_replica_ends_with_episode_closed(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=100)))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        episode = player.start()
        player.step(["KeyA"])
        # what a live replica does to a dead one's episode (server/services/live/replicas.py)
        db.execute(update(Episode).where(Episode.id == episode["id"])
                   .values(status=EpisodeStatus.abandoned, end_reason=REPLICA_LOST))  # fmt: skip
        db.commit()
        player.send(type="cancel")
        failed = player.until("episode_failed")  # the page's way back to "play again"
        assert failed["code"] == "episode_closed" and "start a new one" in failed["message"]
        assert failed["episode_id"] == episode["id"] and failed["next"]["kind"] == "again"
        assert row_of(db, episode["id"]).end_reason == REPLICA_LOST  # not overwritten
        player.send(type="start", env_id="counter")  # the session goes on
        assert player.until("episode_started")["episode"]["index"] == 2
