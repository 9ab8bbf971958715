"""Outcome labels at the source: a study that asks gets the player's answer with the save."""

from __future__ import annotations

from tests.player.conftest import Player, counter_env, row_of, spec


def _episode(player: Player, env_id: str) -> tuple[str, dict]:
    player.send(type="start", env_id=env_id)
    started = player.until("episode_started")
    player.frame()
    for i in range(3):
        player.step(["KeyA"], 1000.0 + i)
    return started["episode"]["id"], player.until("episode_ended")


def test_asked_outcome_is_saved_and_validated(factory, designer, db) -> None:  # type: ignore[no-untyped-def]
    # the study asks; the second environment says it does not
    envs = (counter_env("asks", episode_len=3), {**counter_env("quiet", episode_len=3),
            "ask_outcome": False})  # fmt: skip
    study = factory.study(designer, spec(*envs, ask_outcome=True))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        first, ended = _episode(player, "asks")
        assert ended["ask_save"] is True and ended["ask_outcome"] is True
        # a value outside success / failure is a bad message; the question stays open
        player.send(type="save", keep=True, outcome="maybe")
        assert player.until("error")["code"] == "invalid"
        # an outcome for a discarded episode is refused
        player.send(type="save", keep=False, outcome="failure")
        assert player.until("error")["code"] == "invalid"
        player.send(type="save", keep=True, outcome="success")
        saved = player.until("episode_saved")
        assert saved["status"] == "completed" and saved["outcome"] == "success"

        second, ended = _episode(player, "quiet")
        assert ended["ask_outcome"] is False
        player.send(type="save", keep=True, outcome="failure")
        assert player.until("error")["code"] == "not_asked"
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["outcome"] is None

        third, ended = _episode(player, "asks")
        player.send(type="save", keep=True, outcome=None)  # skipped
        assert player.until("episode_saved")["status"] == "completed"
        player.send(type="end_session")
        player.until("session_ended")

    assert row_of(db, first).player_outcome == "success"
    assert row_of(db, second).player_outcome is None
    assert row_of(db, third).player_outcome is None
    # the list shows the player's answer as the effective outcome until a reviewer overrides
    listed = {
        e["id"]: e
        for e in client.get(f"/api/studies/{study.id}/episodes?include_tests=true").json()["items"]
    }
    assert listed[first]["player_outcome"] == "success" and listed[first]["outcome"] == "success"
    res = client.patch(f"/api/episodes/{first}", json={"outcome": "failure"})
    assert res.status_code == 200, res.text
    assert (res.json()["outcome"], res.json()["player_outcome"]) == ("failure", "success")
    assert res.json()["reviewer_outcome"] == "failure"
    res = client.patch(f"/api/episodes/{first}", json={"outcome": None})
    assert res.json()["outcome"] == "success" and res.json()["reviewer_outcome"] is None
