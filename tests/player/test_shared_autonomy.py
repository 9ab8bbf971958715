"""Shared autonomy over the protocol with a real worker: who drives each frame, the
player's takeover, a failing policy reported to the designer and on the episode row."""

from __future__ import annotations

import json

import pytest

from server.models import Episode
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec
from tests.runtime.fake_policies import ALLOWED

POLICY, HUMAN = 2, 1  # the frame header's control byte


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    """The test settings, allowing the fake policies."""
    return settings.model_copy(update={"policies": ALLOWED})


def test_takeover_and_a_failing_policy_are_recorded_and_reported(factory, designer, db):
    env = counter_env(episode_len=10, max_steps=5)
    env["policy"] = {"id": "fails-fourth", "takeover": {"release_delay_s": 0}}
    study = factory.study(designer, spec(env))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        episode = player.start()
        player.step([])  # the policy drives: KeyB's 2
        player.step(["KeyA"])  # the player takes over at once
        player.step([])  # let go (no delay): the policy again
        player.step([])  # its fourth proposal raises: the player drives from now on
        (failed,) = [m for m in player.seen if m["type"] == "policy_failed"]  # before its frame
        assert "ValueError: lost track of the counter" in failed["message"]
        assert failed["reason"] == "failed"  # not slow: the player's badge words it so
        player.step([])
        player.until("episode_ended")
        player.send(type="save", keep=True)
        player.until("episode_saved")
    assert player.controls == [POLICY, POLICY, HUMAN, POLICY, HUMAN, HUMAN]
    row = db.get(Episode, episode["id"])
    db.refresh(row)
    assert row.interventions == 1 and row.intervention_share == pytest.approx(3 / 5)
    assert "lost track of the counter" in (row.policy_error or "")
    with open_reader(row.storage_path) as reader:
        records = [json.loads(s.custom_data["control"]) for s in reader.steps]
        actions = [int(s.action) for s in list(reader.steps)[1:]]
    assert records[0] is None
    assert [r["source"] for r in records[1:]] == ["policy", "human", "policy", "human", "human"]
    assert [r["policy"] for r in records[1:]] == [[2.0], [2.0], [2.0], None, None]
    assert [r["human"] for r in records[1:]] == [[0.0], [1.0], [0.0], [0.0], [0.0]]
    assert actions == [2, 1, 2, 0, 0]  # executed: the policy's, the player's
