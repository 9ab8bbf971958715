"""The episode service on its own: percentiles, final statuses written once."""

from __future__ import annotations

import pytest

from server.errors import Conflict
from server.models import EpisodeStatus
from server.principal import Principal
from server.recording.signals import percentile
from server.services.crowd import episodes
from server.services.crowd.episodes import EpisodeResult
from server.services.studies.studies import spec_of
from tests.player.conftest import counter_env, spec


@pytest.fixture
def designer(factory):  # type: ignore[no-untyped-def]
    return factory.user()


def test_percentile():
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(map(float, range(101))), 95) == 95.0


def test_finish_once_with_summary(factory, designer, db, settings):
    study = factory.study(designer, spec(counter_env(seeds=[3, 4])))
    who = Principal.for_user(designer.id, designer.role)
    sid = episodes.start_session(db, study.id, who)
    env = study.environments[0]
    assert episodes.next_seed(db, study.id, spec_of(study).environments[0], who) == 3
    row = episodes.create_episode(db, study_id=study.id, env_key=env.env_key, session_id=sid,
                                  principal=who, seed=3, data_root=settings.data_root)  # fmt: skip
    assert row.storage_path.endswith(f"episodes/{study.id}/{row.id}")
    result = EpisodeResult(EpisodeStatus.completed, steps=7, total_reward=2.5,
                           latencies_ms=[10.0, 20.0, 30.0], frames_dropped=2)  # fmt: skip
    done = episodes.finish_episode(db, row.id, result)
    assert (done.status, done.steps, done.latency_p50_ms, done.frames_dropped) == (
        "completed", 7, 20.0, 2)  # fmt: skip
    with pytest.raises(Conflict):
        episodes.finish_episode(db, row.id, result)
    with pytest.raises(ValueError):
        episodes.finish_episode(db, row.id, EpisodeResult(EpisodeStatus.recording, 1, 0.0))
    assert episodes.completed_counts(db, study.id, who) == {"counter": 1}
    assert episodes.next_seed(db, study.id, spec_of(study).environments[0], who) == 4
