"""Quotas hold under concurrency: 30 participants starting at once never push an
environment past ``episodes_total`` (run on SQLite and, with STUDIO_TEST_DATABASE_URL, on
PostgreSQL)."""

from __future__ import annotations

import threading

import pytest

from server.core.db import make_sessionmaker
from server.models import Episode, EpisodeStatus, Participant
from server.principal import Principal
from server.services.crowd import episodes, quotas
from server.services.studies import studies
from tests.player.conftest import activate, counter_env, spec

RACERS = 30


def _people(db, study, n):
    rows = [Participant(study_id=study.id, external_id=f"W{i}") for i in range(n)]
    db.add_all(rows)
    db.commit()
    return [Principal.for_participant(study.id, r.id) for r in rows]


def _reserve(db, study, principal, settings, spec_):
    return episodes.create_episode(
        db, study_id=study.id, env_key="counter", session_id=None, principal=principal,
        seed=1, data_root=settings.data_root, spec=spec_,
    )  # fmt: skip


def test_thirty_concurrent_starts_hold_episodes_total(factory, db, engine, settings):
    study = activate(db, factory.study(factory.user(),
                                       spec(counter_env(episodes_per_participant=3))))  # fmt: skip
    study.spec["environments"][0]["episodes_total"] = 5
    db.commit()
    spec_ = studies.spec_of(study)
    assert spec_.environments[0].episodes_total == 5
    principals = _people(db, study, RACERS)
    sessions = make_sessionmaker(engine)
    barrier = threading.Barrier(RACERS)
    outcomes: list[str] = []
    lock = threading.Lock()

    def race(principal):
        with sessions() as own:
            barrier.wait()
            try:
                _reserve(own, study, principal, settings, spec_)
                result = "ok"
            except quotas.QuotaError as exc:
                result = exc.code or ""
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=race, args=(p,)) for p in principals]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["env_full"] * (RACERS - 5) + ["ok"] * 5
    db.expire_all()
    assert db.query(Episode).filter_by(status=EpisodeStatus.recording).count() == 5


def test_recording_episodes_are_reserved_and_released(factory, db, settings):
    study = activate(db, factory.study(factory.user(), spec(counter_env())))
    study.spec["environments"][0]["episodes_total"] = 1
    db.commit()
    spec_ = studies.spec_of(study)
    first, second = _people(db, study, 2)
    running = _reserve(db, study, first, settings, spec_)
    with pytest.raises(quotas.QuotaError) as full:
        _reserve(db, study, second, settings, spec_)
    assert full.value.code == "env_full"
    with pytest.raises(quotas.QuotaError) as mine:  # one episode each: the first is playing it
        _reserve(db, study, first, settings, spec_)
    assert mine.value.code in ("env_full", "quota_reached")
    # an episode that ends without being kept releases its reservation
    episodes.finish_episode(db, running.id, episodes.EpisodeResult(
        status=EpisodeStatus.rejected, steps=1, total_reward=0.0))  # fmt: skip
    assert _reserve(db, study, second, settings, spec_).status == EpisodeStatus.recording


def test_designer_test_plays_do_not_fill_the_study(factory, db, settings):
    designer = factory.user()
    study = activate(db, factory.study(designer, spec(counter_env())))
    study.spec["environments"][0]["episodes_total"] = 1
    db.commit()
    spec_ = studies.spec_of(study)
    me = Principal.for_user(designer.id, designer.role)
    tests = [_reserve(db, study, me, settings, spec_) for _ in range(3)]
    assert [e.is_test for e in tests] == [True] * 3  # marked as test plays when recorded
    for episode in tests:
        episode.status = EpisodeStatus.completed
    db.commit()
    assert quotas.reserved_totals(db, study.id) == {}
    assert quotas.availability(db, study, spec_) == "active"
    (worker,) = _people(db, study, 1)
    played = _reserve(db, study, worker, settings, spec_)
    assert played.participant_id == worker.participant_id and played.is_test is False
    assert quotas.reserved_totals(db, study.id) == {"counter": 1}
