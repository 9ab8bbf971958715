"""Language-conditioned tasks over the protocol: each episode draws a task (balanced, fixed,
chosen), the player is told its instruction, the row and the log's config record it, and a
task's own settings build the environment the episode runs in."""

from __future__ import annotations

import json

import pytest

from server.models import Episode
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec

TASKS = [
    {"id": "short", "instruction": "Press A once.", "label": "Short"},
    {"id": "long", "instruction": "Press A three times.", "settings": {"episode_len": 3}},
    {"id": "again", "instruction": "Press A once, again.", "seeds": [7]},
]


def _connect(client, study_id):
    return client.websocket_connect(f"/ws/play?study={study_id}")


def _play(player, task_id=None):
    """One episode to its end and saved: its ``episode_started`` view and how many steps
    its log holds (the counter ends after ``episode_len`` presses: the task's setting)."""
    message = {"type": "start", "env_id": "counter"}
    if task_id is not None:
        message["task_id"] = task_id
    player.send(**message)
    episode = player.until("episode_started")["episode"]
    player.frame()
    presses = {"long": 3}.get(episode["task"]["id"], 1)
    mark = len(player.seen)
    for _ in range(presses):
        player.step(["KeyA"])
    ended = next((m for m in player.seen[mark:] if m["type"] == "episode_ended"), None)
    ended = ended or player.until("episode_ended")
    player.send(type="save", keep=True)
    player.until("episode_saved")
    return episode, ended["steps"]


def test_balanced_tasks_go_round_with_their_settings_seeds_and_instruction(factory, designer,
                                                                          db):  # fmt: skip
    env = counter_env(episode_len=1, seeds=[1, 2])
    study = factory.study(designer, spec({**env, "tasks": TASKS}))
    client = factory.client(designer)
    with _connect(client, study.id) as ws:
        player = Player(ws)
        player.until("hello")
        played = [_play(player) for _ in range(4)]
    drawn = [episode["task"]["id"] for episode, _ in played]
    assert drawn == ["short", "long", "again", "short"]  # the fewest episodes first, in order
    assert played[0][0]["task"] == {"id": "short", "label": "Short",
                                    "instruction": "Press A once."}  # fmt: skip
    assert [steps for _, steps in played] == [2, 4, 2, 2]  # "long" built with episode_len 3
    rows = {r.id: r for r in db.query(Episode).all()}
    for episode, _ in played:
        row = rows[episode["id"]]
        task = next(t for t in TASKS if t["id"] == episode["task"]["id"])
        assert (row.task_key, row.instruction) == (task["id"], task["instruction"])
        with open_reader(row.storage_path) as reader:
            config = json.loads(reader.metadata()["env_config"])
        assert [t["id"] for t in config["tasks"]] == [task["id"]]
        assert config["source"]["kwargs"]["episode_len"] == task.get("settings", {}).get(
            "episode_len", 1
        )
    # seeds: the task's own (7), else the environment's in turn for this player
    assert [e["seed"] for e, _ in played] == [1, 2, 7, 2]


def test_fixed_order_and_a_chosen_task(factory, designer, db):
    fixed = {**counter_env("fixed", episode_len=1), "tasks": TASKS[:2], "task_order": "fixed"}
    chosen = {**counter_env(episode_len=1), "tasks": TASKS[:2], "task_order": "choice"}
    study = factory.study(designer, spec(fixed, chosen))
    client = factory.client(designer)
    with _connect(client, study.id) as ws:
        player = Player(ws)
        hello = player.until("hello")
        views = {e["id"]: e for e in hello["study"]["environments"]}
        assert views["counter"]["task_order"] == "choice"
        assert [t["id"] for t in views["counter"]["tasks"]] == ["short", "long"]
        assert views["fixed"]["tasks"] == []  # drawn, not listed
        episode, _ = _play(player, "long")
        assert episode["task"]["id"] == "long"
        episode, _ = _play(player, "long")
        assert episode["task"]["id"] == "long"  # chosen twice: no balancing over a choice
        player.send(type="start", env_id="counter", task_id="nope")
        error = player.until("error")
        assert error["code"] == "unknown_task" and "nope" in error["message"]
        player.send(type="start", env_id="fixed")
        order = [player.until("episode_started")["episode"]["task"]["id"]]
        player.send(type="cancel")
        player.until("episode_saved")
        for _ in range(2):
            player.send(type="start", env_id="fixed")
            order.append(player.until("episode_started")["episode"]["task"]["id"])
            player.send(type="cancel")
            player.until("episode_saved")
    assert order == ["short", "long", "short"]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"id": "a", "instruction": "   "}, "the instruction is empty"),
        ({"id": "a", "instruction": "x" * 501}, "at most 500 characters"),
        ({"id": "A B", "instruction": "x"}, "should match pattern"),
        ({"id": "a", "instruction": "bell \x07"}, "U+0007"),
    ],
)
def test_a_bad_task_is_refused_with_its_field(factory, designer, task, message):
    client = factory.client(designer)
    body = {"spec": spec({**counter_env(), "tasks": [task]})}
    response = client.post("/api/studies", json=body)
    assert response.status_code == 422, response.text
    assert message in response.text
    assert "tasks" in json.dumps(response.json()["detail"])


def test_two_tasks_with_one_id_are_refused(factory, designer):
    client = factory.client(designer)
    tasks = [{"id": "a", "instruction": "x"}, {"id": "a", "instruction": "y"}]
    response = client.post("/api/studies", json={"spec": spec({**counter_env(), "tasks": tasks})})
    assert response.status_code == 422 and "task id 'a' is used twice" in response.text
