"""An episode's judgements on the episodes list and the replay: a played study's real
recorded episodes judged through the judge API by three participants; the list's
``judgements`` field (one query for the page) and ``GET /api/episodes/{id}/judgements``
hold what the answers make, counted here; only the owner may read them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, event, select

from server.export.judgements import JudgementSummary
from server.models import FeedbackItem, Judgement, Participant
from tests.api.routes.judged import played
from tests.api.routes.recorded import Inserter
from tests.export.judgements import judge


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    source = played(db, factory, settings.data_root, recorded)
    study = source.make(db, factory, clip_steps=4, judgements_per_participant=6)
    summaries = judge(db, factory, study)
    # a MountainCar episode: outside the feedback study's source, never judged
    never = Inserter(db, settings.data_root).add(
        source.source, recorded["mountaincar"][0], env_key="mountaincar", participant="player-9"
    )
    db.commit()
    return {"source": source, "study": study, "summaries": summaries, "never": never.id,
            "client": factory.client(source.owner)}  # fmt: skip


def as_api(summary: JudgementSummary | None) -> dict | None:
    if summary is None:
        return None
    return {"wins": summary.wins, "losses": summary.losses, "ties": summary.ties,
            "ratings": summary.ratings, "mean_rating": summary.mean_rating}  # fmt: skip


@contextmanager
def judgement_queries() -> Iterator[list[str]]:
    """The SQL statements reading the judgements table while the block runs (any engine)."""
    seen: list[str] = []

    def note(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        if "judgements" in statement.lower():
            seen.append(statement)

    event.listen(Engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", note)


def test_the_list_carries_each_episodes_summary_in_one_query(world) -> None:  # type: ignore[no-untyped-def]
    c, source = world["client"], world["source"]
    with judgement_queries() as seen:
        res = c.get(f"/api/studies/{source.source.id}/episodes")
    assert res.status_code == 200, res.text
    items = res.json()["items"]
    assert len(items) == 6
    assert len(seen) == 1  # the page's summaries at once, not one query per episode
    for item in items:
        assert item["judgements"] == as_api(world["summaries"].get(item["id"]))
    judged = [i for i in items if i["judgements"]]
    assert judged and sum(i["judgements"]["wins"] for i in judged) > 0
    assert sum(i["judgements"]["ratings"] for i in judged) > 0
    # the episode itself says the same
    first = judged[0]
    detail = c.get(f"/api/episodes/{first['id']}").json()
    assert detail["judgements"] == first["judgements"]


def test_a_never_judged_episode_has_null_and_an_empty_list(world, factory, db) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    assert world["never"] not in world["summaries"]
    res = c.get(f"/api/episodes/{world['never']}/judgements")
    assert res.status_code == 200
    assert res.json() == {"items": [], "more": False, "summary": None}
    assert c.get(f"/api/episodes/{world['never']}").json()["judgements"] is None


def test_the_replays_list_of_one_episodes_judgements(world, db) -> None:  # type: ignore[no-untyped-def]
    c, study = world["client"], world["study"]
    eid, want = max(world["summaries"].items(), key=lambda kv: sum(kv[1].counts()))
    res = c.get(f"/api/episodes/{eid}/judgements")
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["summary"] == as_api(want) and body["more"] is False
    rows = db.execute(
        select(Judgement, FeedbackItem, Participant)
        .join(FeedbackItem, FeedbackItem.id == Judgement.item_id)
        .join(Participant, Participant.id == Judgement.participant_id)
        .where((FeedbackItem.episode_a == eid) | (FeedbackItem.episode_b == eid))
    ).all()
    assert len(body["items"]) == len(rows) > 0
    times = [datetime.fromisoformat(i["answered_at"]) for i in body["items"]]
    assert times == sorted(times, reverse=True)  # newest first
    by_id = {j.id: (j, item, person) for j, item, person in rows}
    outcomes = {"won": 0, "lost": 0, "tie": 0}
    ratings = []
    for got in body["items"]:
        j, item, person = by_id[got["id"]]
        assert got["study_id"] == study.id and got["study_name"] == "Which is better?"
        assert got["participant"] == person.external_id
        assert got["participant"] in ("judge-a", "judge-b", "judge-c")
        assert got["is_gold"] is False and got["counted"] is True
        if got["question_kind"] == "compare":
            assert got["question"] == "Which pole stays up longer?"
            assert got["other_episode"] in (item.episode_a, item.episode_b)
            assert got["other_episode"] != eid
            if got["outcome"] in outcomes:
                outcomes[got["outcome"]] += 1
        else:
            assert got["question"] == "How smooth is the cart?" and got["outcome"] is None
            assert got["other_episode"] is None and 1 <= got["rating"] <= 5
            ratings.append(got["rating"])
        assert 0 <= got["start"] <= got["end"] and got["end"] - got["start"] == 3  # 4 steps
    assert (outcomes["won"], outcomes["lost"], outcomes["tie"]) == (want.wins, want.losses,
                                                                    want.ties)  # fmt: skip
    assert len(ratings) == want.ratings
    if ratings:
        assert sum(ratings) / len(ratings) == want.mean_rating


def test_gold_and_screened_out_judgements_are_listed_but_not_counted(world, db) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    eid = next(iter(world["summaries"]))
    j = db.scalars(
        select(Judgement).join(FeedbackItem, FeedbackItem.id == Judgement.item_id)
        .where((FeedbackItem.episode_a == eid) | (FeedbackItem.episode_b == eid))
    ).first()  # fmt: skip
    assert j is not None
    person = db.get(Participant, j.participant_id)
    person.screened_out_at = datetime.now(UTC)
    db.commit()
    body = c.get(f"/api/episodes/{eid}/judgements").json()
    theirs = [i for i in body["items"] if i["participant"] == person.external_id]
    assert theirs and all(i["counted"] is False for i in theirs)
    mine = [i for i in body["items"] if i["counted"]]
    summary = body["summary"] or {"wins": 0, "losses": 0, "ties": 0, "ratings": 0}
    counted = sum(summary[k] for k in ("wins", "losses", "ties", "ratings"))
    assert counted == sum(1 for i in mine if i["outcome"] != "cant_tell")
    listed = c.get(f"/api/studies/{world['source'].source.id}/episodes").json()["items"]
    assert next(i for i in listed if i["id"] == eid)["judgements"] == body["summary"]


def test_only_the_owner_reads_the_judgements(world, factory) -> None:  # type: ignore[no-untyped-def]
    eid = next(iter(world["summaries"]))
    other = factory.client(factory.user())
    res = other.get(f"/api/episodes/{eid}/judgements")
    assert res.status_code == 404 and "No such episode" in res.json()["detail"]
    assert factory.client().get(f"/api/episodes/{eid}/judgements").status_code == 401
    assert world["client"].get("/api/episodes/nope/judgements").status_code == 404


def test_the_fields_are_documented_in_openapi(world) -> None:  # type: ignore[no-untyped-def]
    spec = world["client"].get("/openapi.json").json()
    path = spec["paths"]["/api/episodes/{episode_id}/judgements"]["get"]
    assert "owner" in path["description"] and "404" in path["responses"]
    schemas = spec["components"]["schemas"]
    assert "null: never judged" in schemas["EpisodeSummary"]["properties"]["judgements"][
        "description"]  # fmt: skip
    props = schemas["EpisodeJudgementPublic"]["properties"]
    assert all(p.get("description") or k in ("id", "study_name", "question_id",
               "question_kind", "answered_at") for k, p in props.items())  # fmt: skip
