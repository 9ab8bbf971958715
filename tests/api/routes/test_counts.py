"""One definition of each count (test plays, excluded, rejected, screened out), the same on
the live dashboard, the episodes list and the export preview (SQLite and PostgreSQL)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import Episode, Participant, utcnow
from tests.factories import Factory


def _episode(db: Session, study, n: int, *, participant=None, **fields) -> Episode:  # type: ignore[no-untyped-def]
    env = study.environments[0]
    row = Episode(
        id=f"count{n}".ljust(32, "0"), study_id=study.id, study_env_id=env.id,
        env_key=env.env_key, participant_id=participant.id if participant else None,
        is_test=participant is None or participant.is_test, steps=3, storage_path=f"/nowhere/{n}",
        started_at=utcnow(), **fields,
    )  # fmt: skip
    db.add(row)
    return row


def test_each_count_has_one_definition_on_every_page(factory: Factory, db: Session):
    owner = factory.user()
    study = factory.study(owner)
    worker = Participant(study_id=study.id, external_id="w1")
    declined = Participant(study_id=study.id, external_id="w2", screened_out_at=utcnow())
    # a designer's preview as a participant: a test participant, who declined consent once
    tester = Participant(study_id=study.id, external_id="TEST-1", is_test=True,
                         screened_out_at=utcnow())  # fmt: skip
    db.add_all([worker, declined, tester])
    db.flush()
    kept = [_episode(db, study, i, participant=worker, status="completed") for i in range(2)]
    excluded = _episode(db, study, 2, participant=worker, status="completed", excluded=True)
    rejected = _episode(db, study, 3, participant=worker, status="rejected")
    _episode(db, study, 4, status="completed")  # the designer's test play
    previewed = _episode(db, study, 5, participant=tester, status="completed")  # a preview's
    kept[0].replay_verdict, rejected.replay_verdict = "verified", "diverged"
    db.commit()
    client = factory.client(owner)

    live = client.get(f"/api/studies/{study.id}/live").json()
    # test plays are counted apart from participants' work
    assert live["episodes_today"]["completed"] == 3 and live["episodes_today"]["rejected"] == 1
    assert live["test_plays_today"] == 2  # the designer's and the preview's
    assert live["replays_today"] == {"verified": 1, "diverged": 1, "pending": 2}
    assert live["quotas"][0]["completed"] == 3
    assert live["participants"] == {"joined": 2, "started": 1, "completed": 0, "screened_out": 1}

    listed = client.get(f"/api/studies/{study.id}/episodes").json()
    assert listed["total"] == 4  # every status, test plays hidden, excluded shown
    with_tests = client.get(f"/api/studies/{study.id}/episodes?include_tests=true").json()
    assert with_tests["total"] == 6
    # listed with test plays, exported without: the test plays are left out, and said why
    res = client.post(f"/api/studies/{study.id}/exports/preview",
                      json={"listed": {"include_tests": True}, "selection": {}})  # fmt: skip
    tests = [r for r in res.json()["left_out"] if r["reason"].startswith("test play")]
    assert tests[0]["count"] == 2 and previewed.id in tests[0]["episode_ids"]

    # The export dialog's preview: what the list shows, what the export leaves out and why.
    res = client.post(f"/api/studies/{study.id}/exports/preview",
                      json={"listed": {}, "selection": {"statuses": ["completed"]}})  # fmt: skip
    assert res.status_code == 200, res.text
    preview = res.json()
    assert preview["listed"] == 4 and preview["exported"] == 2
    reasons = {r["reason"].split(":")[0].split(" (")[0]: r for r in preview["left_out"]}
    assert set(reasons) == {"rejected", "excluded from exports"}
    assert reasons["rejected"]["episode_ids"] == [rejected.id]
    assert reasons["excluded from exports"]["episode_ids"] == [excluded.id]
    # including excluded episodes: only the rejected one is left out
    everything = {"statuses": ["completed"], "include_excluded": True}
    res = client.post(f"/api/studies/{study.id}/exports/preview",
                      json={"listed": {}, "selection": everything})  # fmt: skip
    assert res.json()["exported"] == 3 and len(res.json()["left_out"]) == 1
    # checked rows: the checked ones are the list
    ids = [kept[0].id, excluded.id]
    res = client.post(f"/api/studies/{study.id}/exports/preview",
                      json={"selection": {"episode_ids": ids}})  # fmt: skip
    assert res.json()["listed"] == 2 and res.json()["exported"] == 1

    # participants page: the one who declined is screened out
    people = {
        p["external_id"]: p for p in client.get(f"/api/studies/{study.id}/participants").json()
    }
    assert people["w2"]["screened_out_at"] is not None
    assert set(people) == {"w1", "w2"}  # the preview's test participant is nobody's
    assert (
        factory.client(factory.user())
        .post(f"/api/studies/{study.id}/exports/preview", json={})
        .status_code
        == 404
    )
