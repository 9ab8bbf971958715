"""Drafts: editing a test-played draft, and ids that deleted drafts never hand on."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.models import Episode, StudyState
from server.services.studies import study_files
from server.study_spec import StudySpec
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.factories import spec_dict


@pytest.mark.parametrize("route", ["json", "file"])
def test_removing_a_test_played_environment_from_a_draft_removes_its_test_plays(
    route, factory, db, settings, recorded
):  # type: ignore[no-untyped-def]
    """It used to answer 500 (FOREIGN KEY constraint failed on study_environments)."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    kept = ins.add(study, recorded["cartpole"][0], participant=None, user=owner)
    gone = ins.add(
        study, recorded["mountaincar"][0], env_key="mountaincar", participant=None, user=owner
    )
    kept_id, kept_log = kept.id, Path(kept.storage_path)
    gone_id, gone_log = gone.id, Path(gone.storage_path)
    client = factory.client(owner)
    spec = two_env_spec()
    spec["environments"] = spec["environments"][:1]
    if route == "json":
        res = client.put(f"/api/studies/{study.id}", json={"spec": spec})
    else:
        text = study_files.dump_yaml(StudySpec.model_validate(spec))
        res = client.put(f"/api/studies/{study.id}/file", content=text)
    assert res.status_code == 200, res.text
    assert [env["env_key"] for env in res.json()["environments"]] == ["cartpole"]
    db.expunge_all()
    assert db.get(Episode, gone_id) is None and not gone_log.exists()
    assert db.get(Episode, kept_id) is not None and kept_log.exists()
    # test plays are listed when asked for (the list leaves them out by default)
    episodes = client.get(f"/api/studies/{study.id}/episodes", params={"include_tests": True})
    assert episodes.status_code == 200, episodes.text
    assert [ep["id"] for ep in episodes.json()["items"]] == [kept_id]


def test_a_started_study_still_keeps_its_environments(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    Inserter(db, settings.data_root).add(study, recorded["mountaincar"][0], env_key="mountaincar")
    study.state = StudyState.paused
    db.commit()
    spec = two_env_spec()
    spec["environments"] = spec["environments"][:1]
    res = factory.client(owner).put(f"/api/studies/{study.id}", json={"spec": spec})
    assert res.status_code == 409, res.text
    assert "cannot be removed" in res.json()["detail"]


def test_the_id_of_a_deleted_study_is_never_reused(factory):  # type: ignore[no-untyped-def]
    """An old link to a deleted draft must not open another study (SQLite reused ids)."""
    client = factory.client(factory.user())
    first = client.post("/api/studies", json={"spec": spec_dict("first")}).json()["id"]
    newest = client.post("/api/studies", json={"spec": spec_dict("newest")}).json()["id"]
    assert newest > first
    assert client.delete(f"/api/studies/{newest}").status_code == 204
    again = client.post("/api/studies", json={"spec": spec_dict("again")})
    assert again.status_code == 201, again.text
    assert again.json()["id"] > newest
    assert client.get(f"/api/studies/{newest}").status_code == 404
