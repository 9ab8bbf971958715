"""Outcome labels, the excluded mark and bulk actions as background jobs."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from server.models import BulkJob, Episode, JobState
from server.services.jobs.bulk_runner import BulkRunner
from server.services.review import bulk
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.api.routes.test_episodes_bulk import run, wait_job


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """Four completed CartPole episodes (the player answered on two) and a MountainCar one."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [ins.add(study, cp[i], minutes_ago=50 - i) for i in range(4)]
    eps.append(ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=5))
    eps[0].player_outcome = "success"
    eps[1].player_outcome = "failure"
    db.commit()
    c = factory.client(owner)
    return {"study": study, "eps": eps, "c": c, "url": f"/api/studies/{study.id}/episodes/bulk"}


def _listed(c, study_id: int, query: str = "") -> dict[str, dict]:  # type: ignore[no-untyped-def]
    res = c.get(f"/api/studies/{study_id}/episodes?limit=500{query}")
    assert res.status_code == 200, res.text
    return {e["id"]: e for e in res.json()["items"]}


def test_bulk_set_outcome_overrides_the_player_and_filters(world) -> None:  # type: ignore[no-untyped-def]
    c, eps, study = world["c"], world["eps"], world["study"]
    ids = [e.id for e in eps]
    assert set(_listed(c, study.id, "&outcome=success")) == {ids[0]}
    assert set(_listed(c, study.id, "&outcome=unset")) == set(ids[2:])
    # the reviewer says episodes 0 and 2 failed (checked rows: in the request)
    body = {"selection": {"episode_ids": [ids[0], ids[2]]}, "action": "set_outcome",
            "outcome": "failure"}  # fmt: skip
    assert run(c, world["url"], body, inline=True) == {
        "matched": 2, "changed": 2, "skipped_recording": 0,
    }  # fmt: skip
    listed = _listed(c, study.id)
    assert (listed[ids[0]]["outcome"], listed[ids[0]]["player_outcome"]) == ("failure", "success")
    assert listed[ids[0]]["reviewer_outcome"] == "failure"
    assert set(_listed(c, study.id, "&outcome=failure")) == {ids[0], ids[1], ids[2]}
    assert set(_listed(c, study.id, "&outcome=unset&outcome=success")) == {ids[3], ids[4]}
    # every unset one (a filter: a background job) becomes a success
    body = {"selection": {"filter": {"outcomes": ["unset"]}}, "action": "set_outcome",
            "outcome": "success"}  # fmt: skip
    assert run(c, world["url"], body, inline=False)["changed"] == 2
    assert set(_listed(c, study.id, "&outcome=success")) == {ids[3], ids[4]}
    # unset the reviewer's outcome everywhere: the players' answers show again
    body = {"selection": {"filter": {}}, "action": "set_outcome", "outcome": None}
    assert run(c, world["url"], body)["changed"] == 4
    listed = _listed(c, study.id)
    assert [listed[i]["outcome"] for i in ids] == ["success", "failure", None, None, None]


def test_exclude_include_and_the_excluded_filter(world) -> None:  # type: ignore[no-untyped-def]
    c, eps, study = world["c"], world["eps"], world["study"]
    ids = [e.id for e in eps]
    body = {"selection": {"filter": {"environments": ["cartpole"]}}, "action": "exclude"}
    assert run(c, world["url"], body, inline=False)["changed"] == 4
    assert set(_listed(c, study.id, "&excluded=true")) == set(ids[:4])
    assert set(_listed(c, study.id, "&excluded=false")) == {ids[4]}
    body = {"selection": {"episode_ids": [ids[1]]}, "action": "include"}
    assert run(c, world["url"], body, inline=True)["changed"] == 1
    res = c.patch(f"/api/episodes/{ids[2]}", json={"excluded": False})
    assert res.status_code == 200 and res.json()["excluded"] is False
    assert set(_listed(c, study.id, "&excluded=true")) == {ids[0], ids[3]}
    assert _listed(c, study.id)[ids[0]]["excluded"] is True


def test_many_checked_ids_run_as_a_job(world, settings) -> None:  # type: ignore[no-untyped-def]
    settings.bulk_inline_max = 2
    c, ids = world["c"], [e.id for e in world["eps"]]
    body = {"selection": {"episode_ids": ids[:3]}, "action": "add_tags", "tags": ["t"]}
    res = c.post(world["url"], json=body)
    assert res.status_code == 202, res.text
    job = res.json()
    assert (
        job["action"] == "add_tags" and job["total"] == 3 and job["state"] in ("queued", "running")
    )
    done = wait_job(c, job["id"])
    assert (done["state"], done["done"], done["changed"]) == ("succeeded", 3, 3)
    # two ids: in the request
    body = {"selection": {"episode_ids": ids[:2]}, "action": "remove_tags", "tags": ["t"]}
    assert c.post(world["url"], json=body).status_code == 200


def test_bulk_jobs_are_the_owners(world, factory) -> None:  # type: ignore[no-untyped-def]
    c = world["c"]
    res = c.post(world["url"], json={"selection": {"filter": {}}, "action": "exclude"})
    job = wait_job(c, res.json()["id"])
    other = factory.client(factory.user())
    assert other.get(f"/api/bulk-jobs/{job['id']}").status_code == 404
    assert other.post(f"/api/bulk-jobs/{job['id']}/cancel").status_code == 404
    assert c.get("/api/bulk-jobs/999999").status_code == 404
    res = c.post(f"/api/bulk-jobs/{job['id']}/cancel")
    assert res.status_code == 409 and "succeeded" in res.json()["detail"]


def test_a_dead_replicas_job_is_requeued_and_run_by_another(world, db, engine, settings) -> None:  # type: ignore[no-untyped-def]
    """A bulk job is claimed through the database: a job whose replica stopped heartbeating
    is put back in the queue and run to the end by a live replica's runner."""
    import time
    from datetime import timedelta

    from sqlalchemy.orm import sessionmaker

    from server.models import utcnow

    ids = [e.id for e in world["eps"]]
    long_ago = utcnow() - timedelta(minutes=10)
    row = BulkJob(study_id=world["study"].id, state=JobState.running, action="exclude",
                  params={"ids": ids[:3], "tags": [], "outcome": None, "request": {}},
                  total=3, done=2, claimed_by="dead-replica", heartbeat_at=long_ago,
                  started_at=long_ago, attempts=1)  # fmt: skip
    db.add(row)
    db.commit()
    runner = BulkRunner(
        settings.data_root, sessionmaker(engine), poll_s=0.05, heartbeat_s=0.1, stale_s=5.0,
        replica="alive-replica",
    )  # fmt: skip
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            db.expire_all()
            if db.get(BulkJob, row.id).state not in bulk.ACTIVE:  # type: ignore[union-attr]
                break
            time.sleep(0.05)
    finally:
        runner.stop()
    db.expire_all()
    job = db.get(BulkJob, row.id)
    assert job is not None and job.state == JobState.succeeded, job.message
    assert (job.claimed_by, job.attempts, job.done, job.changed) == ("alive-replica", 2, 3, 3)
    excluded = db.scalars(select(Episode.id).where(Episode.excluded.is_(True))).all()
    assert sorted(excluded) == sorted(ids[:3])


def test_an_unreadable_job_row_fails_with_a_message(world, db, engine, settings) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy.orm import sessionmaker

    row = BulkJob(study_id=world["study"].id, state=JobState.queued, action="exclude",
                  params={}, total=1)  # fmt: skip
    db.add(row)
    db.commit()
    runner = BulkRunner(settings.data_root, sessionmaker(engine), replica="r1")
    assert runner.claim_next() == row.id
    db.expire_all()
    job = db.get(BulkJob, row.id)
    assert job is not None and job.state == JobState.failed
    assert "not readable" in (job.message or "")


@pytest.mark.parametrize(
    "body", [{}, {"outcome": "won"}, {"excluded": "maybe"}, {"outcome": "success", "x": 1}]
)
def test_bad_review_bodies_are_422(world, body) -> None:  # type: ignore[no-untyped-def]
    res = world["c"].patch(f"/api/episodes/{world['eps'][0].id}", json=body)
    assert res.status_code == 422 and res.json()["message"]


def test_outcome_query_values_are_checked(world) -> None:  # type: ignore[no-untyped-def]
    res = world["c"].get(f"/api/studies/{world['study'].id}/episodes?outcome=won")
    assert res.status_code == 422


def test_deleted_by_a_job_are_gone(world, db) -> None:  # type: ignore[no-untyped-def]
    c, ids = world["c"], [e.id for e in world["eps"]]
    body = {"selection": {"filter": {"outcomes": ["failure"]}}, "action": "delete"}
    assert run(c, world["url"], body, inline=False)["changed"] == 1
    db.expire_all()
    assert db.scalars(select(Episode.id).where(Episode.id == ids[1])).all() == []


def test_a_canceled_job_keeps_the_chunks_it_finished(world, db, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(bulk, "BULK_CHUNK", 2)
    ids = [e.id for e in world["eps"]]
    seen: list[tuple[int, int, int]] = []
    act = bulk.BulkAction("exclude")
    with pytest.raises(bulk.BulkCanceledError):
        bulk.apply(
            db, world["study"], ids, act, None, settings.data_root,
            progress=lambda *counts: seen.append(counts), cancel=lambda: bool(seen),
        )  # fmt: skip
    assert seen == [(2, 2, 0)]
    db.expire_all()
    excluded = db.scalars(select(Episode.id).where(Episode.excluded.is_(True))).all()
    assert sorted(excluded) == sorted(ids[:2])
