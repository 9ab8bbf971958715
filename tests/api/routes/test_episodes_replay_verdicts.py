"""Replay verdicts in the episodes API: on each item, filtered on by the list, bulk actions and
exports (an export of verified episodes only), a diverged episode badged, an unknown verdict
422. The verdicts are set on the rows as the replay checker stores them
(server/services/jobs/replay_checks.py; the checking itself: tests/services/
test_replay_verification.py)."""

from __future__ import annotations

from typing import get_args

import pytest

from server.models import Episode, ReplayVerdict, utcnow
from server.runtime.replay_check import Difference
from server.schemas.episodes import ReplayVerdictName
from tests.api.routes.test_episodes_bulk import run
from tests.api.routes.test_exports import start, wait_done
from tests.api.routes.test_exports import world as world  # the fixture
from tests.api.routes.test_exports_review import _tags_docs

DIFFERENCE = Difference(step=3, field="reward", recorded="1.0", replayed="2.0", amount=1.0)


def _verdict(db, episode: Episode, verdict: ReplayVerdict, step=None, **detail) -> None:  # type: ignore[no-untyped-def]
    episode.replay_verdict = verdict
    episode.replay_step = step
    episode.replay_detail = detail or None
    episode.replay_checked_at = None if verdict == ReplayVerdict.pending else utcnow()
    db.commit()


@pytest.fixture
def verdicts(world, db):  # type: ignore[no-untyped-def]
    """The world's five episodes: verified, diverged at step 3, not replayable, pending
    (abandoned), verified (MountainCar)."""
    eps = world["episodes"]
    diff = DIFFERENCE.public()
    _verdict(db, eps[0], ReplayVerdict.verified, steps=9, seconds=0.2)
    _verdict(db, eps[1], ReplayVerdict.diverged, 3, message=diff["message"], difference=diff)
    _verdict(db, eps[2], ReplayVerdict.not_replayable, reason="no_log",
             message="the episode has no log on disk")  # fmt: skip
    _verdict(db, eps[3], ReplayVerdict.pending, reason="waiting",
             message="the episode's log is still open")  # fmt: skip
    _verdict(db, eps[4], ReplayVerdict.verified, steps=13, seconds=0.3)
    return world


def _ids(res) -> set[str]:  # type: ignore[no-untyped-def]
    assert res.status_code == 200, res.text
    return {e["id"] for e in res.json()["items"]}


def test_the_schema_names_every_verdict() -> None:
    assert set(get_args(ReplayVerdictName)) == {v.value for v in ReplayVerdict}


def test_items_carry_the_verdict_its_step_and_message(verdicts) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = verdicts["client"], verdicts["study"].id, verdicts["episodes"]
    items = {e["id"]: e for e in c.get(f"/api/studies/{sid}/episodes").json()["items"]}
    got = {
        i: (e["replay_verdict"], e["replay_step"], e["replay_message"]) for i, e in items.items()
    }
    assert got == {
        eps[0].id: ("verified", None, None),
        # the checker's timestep 3 holds the reward of step 2's action (RLDS steps)
        eps[1].id: ("diverged", 2, "step 2, reward: recorded 1.0, replayed 2.0 (by 1)"),
        eps[2].id: ("not_replayable", None, "the episode has no log on disk"),
        eps[3].id: ("pending", None, "the episode's log is still open"),
        eps[4].id: ("verified", None, None),
    }
    # a diverged episode is flagged like the other quality problems
    flagged = {i for i, e in items.items() if "diverged" in {b["flag"] for b in e["badges"]}}
    assert flagged == {eps[1].id}
    badge = next(b for b in items[eps[1].id]["badges"] if b["flag"] == "diverged")
    assert badge["label"] == "replay diverged"
    # the episode itself: the whole difference, why one is not replayable, when checked
    one = c.get(f"/api/episodes/{eps[1].id}").json()
    assert one["replay_difference"] == {
        **DIFFERENCE.public(), "step": 2, "message": items[eps[1].id]["replay_message"],
    }  # fmt: skip
    assert one["replay_checked_at"] is not None
    two = c.get(f"/api/episodes/{eps[2].id}").json()
    assert (two["replay_reason"], two["replay_difference"]) == ("no_log", None)
    pending = c.get(f"/api/episodes/{eps[3].id}").json()
    assert (pending["replay_verdict"], pending["replay_checked_at"]) == ("pending", None)


@pytest.mark.parametrize(
    ("field", "verdict", "stored", "shown"),
    [
        ("reward", ReplayVerdict.diverged, 3, 2),  # earned by step 2's action
        ("discount", ReplayVerdict.diverged, 1, 0),
        ("observation/state", ReplayVerdict.diverged, 3, 3),  # o_3 is step 3's
        ("is_last", ReplayVerdict.diverged, 5, 5),
        (None, ReplayVerdict.not_replayable, 4, 3),  # raised stepping with step 3's action
    ],
)
def test_steps_are_the_replays_steps(verdicts, db, field, verdict, stored, shown) -> None:  # type: ignore[no-untyped-def]
    c, ep = verdicts["client"], verdicts["episodes"][0]
    if field is None:
        _verdict(db, ep, verdict, stored, reason="env_raised", message="it raised")
    else:
        diff = Difference(stored, field, "a", "b", None).public()
        _verdict(db, ep, verdict, stored, message=diff["message"], difference=diff)
    one = c.get(f"/api/episodes/{ep.id}").json()
    assert one["replay_step"] == shown
    if field is not None:
        assert one["replay_difference"]["step"] == shown
        assert one["replay_message"] == f"step {shown}, {field}: recorded a, replayed b"


def test_the_list_filters_on_verdicts(verdicts) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = verdicts["client"], verdicts["study"].id, verdicts["episodes"]
    url = f"/api/studies/{sid}/episodes"
    assert _ids(c.get(url)) == {e.id for e in eps}  # no verdict named: every one
    assert _ids(c.get(url, params={"replay_verdict": "verified"})) == {eps[0].id, eps[4].id}
    both = {"replay_verdict": ["diverged", "not_replayable"]}
    assert _ids(c.get(url, params=both)) == {eps[1].id, eps[2].id}
    res = c.get(url, params={"replay_verdict": "pending", "env": "cartpole"})
    assert _ids(res) == {eps[3].id} and res.json()["total"] == 1
    # with the other filters and a sort
    res = c.get(url, params={"replay_verdict": "verified", "sort": "steps", "env": "mountaincar"})
    assert _ids(res) == {eps[4].id}


def test_an_unknown_verdict_is_422(verdicts) -> None:  # type: ignore[no-untyped-def]
    c, sid = verdicts["client"], verdicts["study"].id
    res = c.get(f"/api/studies/{sid}/episodes", params={"replay_verdict": "ok"})
    assert res.status_code == 422 and "replay_verdict" in res.text
    body = {"selection": {"replay_verdicts": ["checked"]}, "options": {"format": "envlogger"}}
    res = c.post(f"/api/studies/{sid}/exports", json=body)
    assert res.status_code == 422 and "replay_verdicts" in res.text
    bulk = {"selection": {"filter": {"replay_verdicts": ["Verified"]}}, "action": "exclude"}
    res = c.post(f"/api/studies/{sid}/episodes/bulk", json=bulk)
    assert res.status_code == 422 and "replay_verdicts" in res.text


def test_an_export_of_verified_episodes_only(verdicts) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = verdicts["client"], verdicts["study"].id, verdicts["episodes"]
    selection = {"environments": ["cartpole"], "replay_verdicts": ["verified"]}
    # the preview of the list so filtered says it exports that one
    res = c.post(f"/api/studies/{sid}/exports/preview",
                 json={"listed": selection, "selection": selection})  # fmt: skip
    assert res.status_code == 200, res.text
    assert (res.json()["listed"], res.json()["exported"]) == (1, 1)
    # the list shows every CartPole episode, the export takes the verified one: the preview
    # says why it leaves the others out
    listed = {"environments": ["cartpole"]}
    res = c.post(f"/api/studies/{sid}/exports/preview",
                 json={"listed": listed, "selection": selection})  # fmt: skip
    assert res.status_code == 200, res.text
    assert (res.json()["listed"], res.json()["exported"]) == (4, 1)
    reasons = {r["reason"]: r["episode_ids"] for r in res.json()["left_out"]}
    assert reasons == {
        "replay diverged: only verified episodes are exported": [eps[1].id],
        "replay not replayable: only verified episodes are exported": [eps[2].id],
        "abandoned: only completed episodes are exported (choose statuses to change it)": [
            eps[3].id
        ],
    }
    job = start(c, sid, selection, format="envlogger", archive="tar.gz")
    assert job["episodes_total"] == 1  # of three completed CartPole episodes
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    assert set(_tags_docs(c.get(done["download_url"]).content, "raw")) == {eps[0].id}
    # nothing verified among them: a 422 that says no episode matches
    none = {"environments": ["cartpole"], "replay_verdicts": ["pending"]}  # eps[3]: abandoned
    res = c.post(f"/api/studies/{sid}/exports", json={"selection": none, "options": {}})
    assert res.status_code == 422 and "No episode matches" in res.json()["message"]


def test_bulk_actions_over_a_verdict(verdicts, db) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = verdicts["client"], verdicts["study"].id, verdicts["episodes"]
    body = {"selection": {"filter": {"replay_verdicts": ["diverged", "not_replayable"]}},
            "action": "add_tags", "tags": ["check-replay"]}  # fmt: skip
    counts = run(c, f"/api/studies/{sid}/episodes/bulk", body)
    assert counts["matched"] == 2 and counts["changed"] == 2
    tagged = c.get(f"/api/studies/{sid}/episodes", params={"tag": "check-replay"})
    assert _ids(tagged) == {eps[1].id, eps[2].id}
