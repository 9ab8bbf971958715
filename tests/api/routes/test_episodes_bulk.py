"""Bulk actions on a study's episodes: tag, untag and delete over ids or a filter."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from server.models import Episode, EpisodeDeletion, EpisodeTag, Note, Role, StepTag
from server.recording.format import episode_dir
from server.services.review import bulk
from tests.api.routes.recorded import Inserter, two_env_spec


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A designer's study: three completed episodes, one abandoned, one still recording."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [
        ins.add(study, cp[0], tags=("good",), minutes_ago=50),
        ins.add(study, cp[1], status="abandoned", participant="worker-2", minutes_ago=40),
        ins.add(study, cp[2], tags=("good", "weird"), minutes_ago=30),
        ins.add(study, cp[3], status="recording", minutes_ago=20),
        ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=10),
    ]
    url = f"/api/studies/{study.id}/episodes/bulk"
    return {"owner": owner, "study": study, "eps": eps, "c": factory.client(owner), "url": url}


def run(c, url: str, body: dict, inline: bool | None = None) -> dict:  # type: ignore[no-untyped-def]
    """POST a bulk action; a queued job (202) is followed to its end. The counts."""
    res = c.post(url, json=body)
    assert res.status_code in (200, 202), res.text
    if inline is not None:
        assert res.status_code == (200 if inline else 202), res.text
    if res.status_code == 200:
        return res.json()
    job = wait_job(c, res.json()["id"])
    assert job["state"] == "succeeded", job
    assert job["done"] == job["total"] and job["progress"] == 1.0
    return {k: job[k] for k in ("changed", "skipped_recording")} | {"matched": job["total"]}


def wait_job(c, job_id: int, deadline_s: float = 60.0) -> dict:  # type: ignore[no-untyped-def]
    """Poll a bulk job until it finishes (the deadline only stops a hung test)."""
    end = time.monotonic() + deadline_s
    while True:
        job = c.get(f"/api/bulk-jobs/{job_id}").json()
        if job["state"] not in ("queued", "running") or time.monotonic() > end:
            return job
        time.sleep(0.05)


def _tags(db, episode_id: str) -> list[str]:  # type: ignore[no-untyped-def]
    db.expire_all()
    rows = db.scalars(select(EpisodeTag.name).where(EpisodeTag.episode_id == episode_id))
    return sorted(rows)


def test_add_and_remove_tags_over_ids(world, db) -> None:  # type: ignore[no-untyped-def]
    c, eps = world["c"], world["eps"]
    ids = [eps[0].id, eps[1].id, "not-in-this-study"]
    body = {"selection": {"episode_ids": ids}, "action": "add_tags", "tags": ["good", "x"]}
    res = c.post(world["url"], json=body)
    assert res.status_code == 200, res.text
    assert res.json() == {"matched": 2, "changed": 2, "skipped_recording": 0}
    assert _tags(db, eps[0].id) == ["good", "x"] and _tags(db, eps[1].id) == ["good", "x"]
    assert _tags(db, eps[2].id) == ["good", "weird"]
    # again: nothing new to add
    assert c.post(world["url"], json=body).json()["changed"] == 0
    body = {"selection": {"episode_ids": [eps[1].id]}, "action": "remove_tags", "tags": ["x"]}
    assert c.post(world["url"], json=body).json() == {
        "matched": 1, "changed": 1, "skipped_recording": 0,
    }  # fmt: skip
    assert _tags(db, eps[1].id) == ["good"] and _tags(db, eps[0].id) == ["good", "x"]


def test_tags_over_a_filter(world, db) -> None:  # type: ignore[no-untyped-def]
    c, eps = world["c"], world["eps"]
    flt = {"statuses": ["completed"], "environments": ["cartpole"]}
    body = {"selection": {"filter": flt}, "action": "add_tags", "tags": ["batch"]}
    assert run(c, world["url"], body, inline=False)["changed"] == 2
    assert [e.id for e in eps if "batch" in _tags(db, e.id)] == [eps[0].id, eps[2].id]
    body = {"selection": {"filter": {"tags": ["good"]}}, "action": "remove_tags", "tags": ["good"]}
    assert run(c, world["url"], body)["matched"] == 2
    assert _tags(db, eps[2].id) == ["batch", "weird"] and _tags(db, eps[0].id) == ["batch"]
    # an empty filter matches every episode of the study, whatever its status
    body = {"selection": {"filter": {}}, "action": "add_tags", "tags": ["all"]}
    assert run(c, world["url"], body)["matched"] == 5


def test_delete_removes_rows_logs_and_is_recorded(world, db, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(bulk, "BULK_CHUNK", 2)  # the job goes chunk by chunk: one record
    c, study = world["c"], world["study"]
    ids = [e.id for e in world["eps"]]  # the rows go: keep their ids
    detail = c.get(f"/api/episodes/{ids[2]}").json()
    assert detail["tags"] == ["good", "weird"]
    assert c.post(f"/api/episodes/{ids[2]}/notes", json={"body": "n"}).status_code == 201
    res = c.post(f"/api/episodes/{ids[2]}/step-tags", json={"name": "s", "start": 0})
    assert res.status_code == 201
    folders = {i: episode_dir(settings.data_root, study.id, i) for i in ids}
    assert all(folder.is_dir() for folder in folders.values())
    # everything but the mountaincar episode: the recording one is skipped
    body = {"selection": {"filter": {"environments": ["cartpole"]}}, "action": "delete"}
    assert run(c, world["url"], body, inline=False) == {
        "matched": 4, "changed": 3, "skipped_recording": 1,
    }  # fmt: skip
    db.expire_all()
    left = db.scalars(select(Episode.id).where(Episode.study_id == study.id)).all()
    assert sorted(left) == sorted([ids[3], ids[4]])
    for model in (EpisodeTag, StepTag, Note):
        assert db.scalars(select(model).where(model.episode_id == ids[2])).all() == []
    assert [i for i in ids if not folders[i].exists()] == [ids[0], ids[1], ids[2]]
    record = db.scalars(select(EpisodeDeletion)).one()
    assert (record.study_id, record.user_id, record.count) == (study.id, world["owner"].id, 3)
    assert record.deleted_at is not None
    # nothing left to delete among the cartpole ones: no new record
    assert run(c, world["url"], body)["changed"] == 0
    assert len(db.scalars(select(EpisodeDeletion)).all()) == 1


def test_another_designers_study_is_404(world, factory, db) -> None:  # type: ignore[no-untyped-def]
    body = {"selection": {"episode_ids": [world["eps"][0].id]}, "action": "delete"}
    other = factory.client(factory.user())
    assert other.post(world["url"], json=body).status_code == 404
    assert other.post("/api/studies/999999/episodes/bulk", json=body).status_code == 404
    db.expire_all()
    assert db.get(Episode, world["eps"][0].id) is not None
    admin = factory.client(factory.user(Role.admin))
    body = {"selection": {"episode_ids": [world["eps"][0].id]}, "action": "add_tags", "tags": ["a"]}
    assert admin.post(world["url"], json=body).json()["changed"] == 1


@pytest.mark.parametrize(
    "body",
    [
        {"selection": {"episode_ids": ["a"]}, "action": "archive"},
        {"selection": {"episode_ids": ["a"]}, "action": "add_tags"},
        {"selection": {"episode_ids": ["a"]}, "action": "add_tags", "tags": [""]},
        {"selection": {"episode_ids": ["a"]}, "action": "add_tags", "tags": ["  "]},
        {"selection": {"episode_ids": ["a"]}, "action": "remove_tags", "tags": ["a,b"]},
        {"selection": {"episode_ids": [f"e{i}" for i in range(10_001)]}, "action": "delete"},
        {"selection": {"episode_ids": []}, "action": "delete"},
        {"selection": {}, "action": "delete"},
        {"selection": {"episode_ids": ["a"], "filter": {}}, "action": "delete"},
        {"selection": {"filter": {"statuses": ["nope"]}}, "action": "delete"},
        {"selection": {"filter": {"colour": "red"}}, "action": "delete"},
        {"selection": {"episode_ids": ["a\x00"]}, "action": "delete"},
        {"selection": {"filter": {}}, "action": "add_tags", "tags": ["a,b"]},
        {"selection": {"filter": {}}, "action": "set_outcome", "outcome": "maybe"},
        {"selection": {"filter": {}}, "action": "exclude", "outcome": "success"},
        {"selection": {"filter": {"outcomes": ["won"]}}, "action": "exclude"},
        {"selection": {"filter": {"excluded": "perhaps"}}, "action": "exclude"},
    ],
)
def test_bad_bodies_are_422_with_a_message(body, world) -> None:  # type: ignore[no-untyped-def]
    res = world["c"].post(world["url"], json=body)
    assert res.status_code == 422, res.text
    assert res.json()["message"]
