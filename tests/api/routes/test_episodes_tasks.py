"""Tasks in the review API: the list filters by task ("-": episodes without one; an unknown
task lists none, a malformed one is 422), items and the episode carry task_key and
instruction, exports and their preview and bulk actions follow the task filter; the live
dashboard counts episodes per task of each environment and the participants list and CSV
completed episodes per task, from real play (SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import io

import pytest

from server.models import Episode
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.api.routes.test_episodes_bulk import run
from tests.api.routes.test_exports import start, wait_done
from tests.api.routes.test_exports_review import _tags_docs
from tests.player.conftest import Player, activate, counter_env, spec, ticket_socket

RED = {"id": "red", "instruction": "Pick up the <b>red</b> cube.", "label": "Red"}
BLUE = {"id": "blue", "instruction": "Pick up the blue cube."}


@pytest.fixture
def tasked(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """CartPole lists red and blue: two red episodes, one blue, one from before the tasks
    (no task); MountainCar lists none. The task is set on the rows as the player stores it."""
    owner = factory.user()
    body = two_env_spec()
    body["environments"][0]["tasks"] = [RED, BLUE]
    study = factory.study(owner, body)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [
        ins.add(study, cp[0], minutes_ago=50),
        ins.add(study, cp[1], participant="worker-2", minutes_ago=40),
        ins.add(study, cp[2], minutes_ago=30),
        ins.add(study, cp[3], minutes_ago=20),
        ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=10),
    ]
    for episode, task in zip(eps, (RED, BLUE, RED, None, None), strict=True):
        episode.task_key = task and task["id"]
        episode.instruction = task and task["instruction"]
    db.commit()
    return {"study": study, "episodes": eps, "client": factory.client(owner)}


def _ids(res) -> set[str]:  # type: ignore[no-untyped-def]
    assert res.status_code == 200, res.text
    return {e["id"] for e in res.json()["items"]}


def test_the_list_filters_by_task(tasked) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = tasked["client"], tasked["study"].id, tasked["episodes"]
    url = f"/api/studies/{sid}/episodes"
    assert _ids(c.get(url)) == {e.id for e in eps}
    red = c.get(url, params={"task": "red"})
    assert _ids(red) == {eps[0].id, eps[2].id} and red.json()["total"] == 2
    assert _ids(c.get(url, params={"task": "blue"})) == {eps[1].id}
    assert _ids(c.get(url, params={"task": "-"})) == {eps[3].id, eps[4].id}  # no task
    assert _ids(c.get(url, params={"task": "-", "env": "cartpole"})) == {eps[3].id}
    assert _ids(c.get(url, params={"task": "red", "participant": "worker-2"})) == set()
    # a task nobody drew (or a study without it) is an empty list, not an error
    unknown = c.get(url, params={"task": "green"})
    assert _ids(unknown) == set() and unknown.json()["total"] == 0
    # sorted and paged by cursor, the filter holds
    page = c.get(url, params={"task": "red", "sort": "steps", "limit": 1}).json()
    assert page["next_cursor"] is not None
    rest = c.get(url, params={"task": "red", "sort": "steps", "after": page["next_cursor"]})
    assert {page["items"][0]["id"]} | _ids(rest) == {eps[0].id, eps[2].id}


@pytest.mark.parametrize("bad", ["Red", "red cube", "<b>", "x" * 65, "--", ""])
def test_a_malformed_task_is_422(tasked, bad) -> None:  # type: ignore[no-untyped-def]
    c, sid = tasked["client"], tasked["study"].id
    res = c.get(f"/api/studies/{sid}/episodes", params={"task": bad})
    assert res.status_code == 422 and "task" in res.text
    res = c.post(f"/api/studies/{sid}/exports/preview", json={"selection": {"task": bad}})
    assert res.status_code == 422 and "task" in res.text


def test_items_and_the_episode_carry_the_task(tasked) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = tasked["client"], tasked["study"].id, tasked["episodes"]
    items = {e["id"]: e for e in c.get(f"/api/studies/{sid}/episodes").json()["items"]}
    assert (items[eps[0].id]["task_key"], items[eps[0].id]["instruction"]) == (
        "red", RED["instruction"]
    )  # fmt: skip
    assert (items[eps[4].id]["task_key"], items[eps[4].id]["instruction"]) == (None, None)
    one = c.get(f"/api/episodes/{eps[1].id}").json()
    assert (one["task_key"], one["instruction"]) == ("blue", BLUE["instruction"])
    schema = c.get("/openapi.json").json()["components"]["schemas"]
    assert {"task_key", "instruction"} <= set(schema["EpisodeDetail"]["properties"])
    assert "task" in schema["EpisodeFilterIn"]["properties"]


def test_an_export_and_its_preview_follow_the_task(tasked) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = tasked["client"], tasked["study"].id, tasked["episodes"]
    red = {"task": "red"}
    res = c.post(f"/api/studies/{sid}/exports/preview", json={"listed": red, "selection": red})
    assert res.status_code == 200, res.text
    assert (res.json()["listed"], res.json()["exported"]) == (2, 2)
    none = {"task": "-", "environments": ["cartpole"]}
    res = c.post(f"/api/studies/{sid}/exports/preview", json={"listed": none, "selection": none})
    assert (res.json()["listed"], res.json()["exported"]) == (1, 1)
    job = start(c, sid, red, format="envlogger", archive="tar.gz")
    assert job["episodes_total"] == 2
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    assert set(_tags_docs(c.get(done["download_url"]).content, "raw")) == {eps[0].id, eps[2].id}
    # a task no episode drew: the export says nothing matches
    res = c.post(f"/api/studies/{sid}/exports", json={"selection": {"task": "green"}})
    assert res.status_code == 422 and "No episode matches" in res.json()["message"]


def test_bulk_actions_over_a_task(tasked) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = tasked["client"], tasked["study"].id, tasked["episodes"]
    body = {"selection": {"filter": {"task": "blue"}}, "action": "add_tags", "tags": ["blue-ok"]}
    assert run(c, f"/api/studies/{sid}/episodes/bulk", body)["changed"] == 1
    assert _ids(c.get(f"/api/studies/{sid}/episodes", params={"tag": "blue-ok"})) == {eps[1].id}


# --- the live dashboard and the participants page, from real play -------------------------
TASKS = [{"id": "red", "instruction": "Press A for red.", "label": "Red"},
         {"id": "blue", "instruction": "Press A for blue."},
         {"id": "green", "instruction": "Press A for green."}]  # fmt: skip


def _join(client, token: str, who: str) -> str:  # type: ignore[no-untyped-def]
    res = client.post("/api/play/join", json={"token": token, "participant_id": who})
    assert res.status_code == 200, res.text
    return str(res.json()["ticket"])


def _play_one(player: Player) -> str:
    """One episode of the counter (one press ends it), saved: its task id."""
    player.send(type="start", env_id="counter")
    task = player.until("episode_started")["episode"]["task"]["id"]
    player.frame()
    player.step(["KeyA"])
    player.until("episode_ended")
    player.send(type="save", keep=True)
    player.until("episode_saved")
    return str(task)


def test_dashboard_and_participants_count_per_task(factory, db) -> None:  # type: ignore[no-untyped-def]
    designer = factory.user()
    env = {
        **counter_env(episode_len=1, episodes_per_participant=5),
        "tasks": TASKS,
        "task_order": "fixed",
    }
    study = activate(db, factory.study(designer, spec(env, counter_env("plain"))))
    anon = factory.client()
    with ticket_socket(anon, _join(anon, study.permalink_token, "P-1")) as ws:
        player = Player(ws)
        player.until("hello")
        assert [_play_one(player) for _ in range(3)] == ["red", "blue", "green"]
        assert _play_one(player) == "red"  # the fixed order goes round
    other = factory.client()
    with ticket_socket(other, _join(other, study.permalink_token, "P-2")) as ws:
        player = Player(ws)
        player.until("hello")
        assert _play_one(player) == "red"
        player.send(type="start", env_id="counter")  # blue, still recording
        assert player.until("episode_started")["episode"]["task"]["id"] == "blue"
        player.frame()
        live = factory.client(designer).get(f"/api/studies/{study.id}/live").json()
    counter = next(q for q in live["quotas"] if q["env_key"] == "counter")
    assert (counter["completed"], counter["recording"]) == (5, 1)
    figures = {t["id"]: (t["name"], t["completed"], t["recording"]) for t in counter["tasks"]}
    assert figures == {"red": ("Red", 3, 0), "blue": ("blue", 1, 1), "green": ("green", 1, 0)}
    assert [t["id"] for t in counter["tasks"]] == ["red", "blue", "green"]  # the study's order
    assert counter["tasks"][0]["instruction"] == "Press A for red."
    plain = next(q for q in live["quotas"] if q["env_key"] == "plain")
    assert plain["tasks"] == []  # it lists no task

    client = factory.client(designer)
    people = {
        p["external_id"]: p for p in client.get(f"/api/studies/{study.id}/participants").json()
    }
    assert people["P-1"]["episodes_by_task"] == {"blue": 1, "green": 1, "red": 2}
    assert people["P-2"]["episodes_by_task"] == {"red": 1}  # the recording one is not counted
    res = client.get(f"/api/studies/{study.id}/participants.csv")
    assert res.status_code == 200
    rows = list(csv.DictReader(io.StringIO(res.text)))
    header = res.text.splitlines()[0].split(",")
    # one column per task, in the study's order, after the others
    assert header[-3:] == ["episodes_completed:red", "episodes_completed:blue",
                           "episodes_completed:green"]  # fmt: skip
    got = {r["external_id"]: [r[h] for h in header[-3:]] for r in rows}
    assert got == {"P-1": ["2", "1", "1"], "P-2": ["1", "0", "0"]}


def test_a_task_no_longer_listed_and_episodes_without_one_are_counted(factory, db):  # type: ignore[no-untyped-def]
    """The designer removed a task after episodes drew it, and added tasks after episodes
    without one: the dashboard still shows them (the list's filter finds them too)."""
    designer = factory.user()
    env = {**counter_env(episode_len=1, episodes_per_participant=5), "tasks": TASKS[:1]}
    study = factory.study(designer, spec(env))
    worker = factory.client()
    activate(db, study)
    with ticket_socket(worker, _join(worker, study.permalink_token, "P-1")) as ws:
        player = Player(ws)
        player.until("hello")
        ids = [_play_one(player) for _ in range(3)]
    assert ids == ["red"] * 3
    rows = db.query(Episode).filter_by(study_id=study.id).order_by(Episode.started_at).all()
    rows[0].task_key, rows[0].instruction = "old", "Gone now."
    rows[1].task_key = rows[1].instruction = None
    db.commit()
    client = factory.client(designer)
    live = client.get(f"/api/studies/{study.id}/live").json()
    tasks = [(t["id"], t["name"], t["completed"]) for t in live["quotas"][0]["tasks"]]
    assert tasks == [("red", "Red", 1), ("old", "old", 1), (None, "no task", 1)]
    people = client.get(f"/api/studies/{study.id}/participants").json()
    assert people[0]["episodes_by_task"] == {"old": 1, "red": 1}
    text = client.get(f"/api/studies/{study.id}/participants.csv").text
    assert text.splitlines()[0].endswith(",episodes_completed:red,episodes_completed:old")
    listed = client.get(f"/api/studies/{study.id}/episodes", params={"task": "old"})
    assert _ids(listed) == {rows[0].id}
