"""What a feedback study's designer reads of real judgements made through the judge API: the
study's figures, the participants list and CSV (gold accuracy, agreement, a gold screen-out),
the live dashboard's part and the preference dataset's two files; who may read them."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import FeedbackItem, Judgement, Participant, utcnow
from server.services.feedback import dataset, summary
from tests.api.routes.judged import PROLIFIC, played


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    return played(db, factory, settings.data_root, recorded)


def join(client: TestClient, study: Any, pid: str) -> dict[str, str]:
    """A Prolific participant joins: the headers of their judge calls."""
    res = client.post("/api/play/join", json={
        "token": study.permalink_token, "params": {"PROLIFIC_PID": pid, **PROLIFIC}})  # fmt: skip
    assert res.status_code == 200, res.text
    return {"X-Play-Ticket": res.json()["ticket"], "X-Browser-Key": res.json()["browser_key"]}


def judge(client: TestClient, db: Session, headers: dict[str, str], gold_right: bool,
          prefer: str = "a", rating: int = 4) -> int:  # fmt: skip
    """Answer every item given, as a person would through the API: compare ``prefer`` (the
    left clip when it is shown on the left), ``rating``; gold right or wrong as told (a test
    knows which items are gold only from the database). Returns the judgements answered."""
    answered = 0
    while item := client.get("/api/play/judge/next", headers=headers).json()["item"]:
        row = db.scalar(select(Judgement).where(Judgement.token == item["token"]))
        assert row is not None
        db.refresh(row)
        if item["question"]["kind"] == "compare":
            want = row.item.gold_answer if row.item.is_gold else prefer
            if row.item.is_gold and not gold_right:
                want = "b" if want == "a" else "a"
            left = "b" if row.swapped else "a"
            body: dict[str, Any] = {"choice": "left" if want == left else "right"}
        else:
            body = {"rating": rating}
        res = client.post(f"/api/play/judge/{item['token']}/answer", json=body, headers=headers)
        assert res.status_code == 200, res.text
        answered += 1
        if res.json()["screened_out"]:
            break
    return answered


def gold_study(world, db, factory, **feedback: Any):  # type: ignore[no-untyped-def]
    """Compare and rate questions, two gold pairs at half the items, screening below 75%."""
    eps = world.episodes
    gold = [{"question": "balance", "episodes": [eps[0].id, eps[1].id], "answer": "a"},
            {"question": "balance", "episodes": [eps[2].id, eps[3].id], "answer": "b"}]  # fmt: skip
    return world.make(db, factory, gold=gold, gold_rate=0.5, gold_min_accuracy=0.75,
                      gold_min_answers=2, judgements_per_participant=4, judgements_total=40,
                      **feedback)  # fmt: skip


def three_judges(world, db, factory, **feedback: Any):  # type: ignore[no-untyped-def]
    """Two careful judges and a careless one (screened out by gold), through the API."""
    study = gold_study(world, db, factory, **feedback)
    made = {}
    for pid, right in (("careful-1", True), ("careful-2", True), ("careless", False)):
        made[pid] = judge(factory.client(), db, join(factory.client(), study, pid), right)
    return study, made


def test_the_figures_count_what_was_judged(world, factory, db):
    study, made = three_judges(world, db, factory)
    assert made["careful-1"] == made["careful-2"] == 4
    designer = factory.client(world.owner)
    res = designer.get(f"/api/studies/{study.id}/feedback")
    assert res.status_code == 200, res.text
    fig = res.json()
    answered = db.scalar(select(func.count()).select_from(Judgement).where(
        Judgement.study_id == study.id, Judgement.answered_at.is_not(None)))  # fmt: skip
    gold = db.scalar(select(func.count()).select_from(Judgement).join(FeedbackItem).where(
        Judgement.study_id == study.id, Judgement.answered_at.is_not(None),
        FeedbackItem.is_gold.is_(True)))  # fmt: skip
    assert fig["answered"] == answered == sum(made.values())
    assert fig["gold_answered"] == gold >= 4  # half the items of the careful judges
    assert fig["quota"] == {"total": 40, "counted": answered - gold, "reached": False}
    assert fig["pool_episodes"] == 5
    by_q = {q["id"]: q for q in fig["questions"]}
    assert list(by_q) == ["balance", "smooth"]
    assert sum(q["answered"] for q in fig["questions"]) == answered
    assert by_q["balance"]["gold_items"] == 2 and by_q["smooth"]["gold_items"] == 0
    assert fig["gold_items"] == 2
    assert fig["items"] == db.scalar(select(func.count()).select_from(FeedbackItem).where(
        FeedbackItem.study_id == study.id))  # fmt: skip
    # the careful two answered alike on the items they shared: full agreement
    assert fig["agreement"] == 1.0 and fig["pairs"] >= 1
    assert fig["per_minute"][-1] == answered and sum(fig["per_minute"]) == answered
    assert fig["rate_per_minute"] == pytest.approx(answered / 10)
    people = fig["participants"]
    assert people == {"joined": 3, "active": 2, "completed": 0, "screened_out_gold": 1}

    # answers of minutes ago fall in their minute; older than ten minutes in none
    rows = db.scalars(select(Judgement).where(Judgement.study_id == study.id,
                      Judgement.answered_at.is_not(None)).order_by(Judgement.id)).all()  # fmt: skip
    rows[0].answered_at = utcnow() - timedelta(minutes=3, seconds=30)
    rows[1].answered_at = utcnow() - timedelta(minutes=11)
    db.commit()
    rate = designer.get(f"/api/studies/{study.id}/feedback").json()["per_minute"]
    assert len(rate) == 10 and rate[6] == 1 and rate[-1] == answered - 2
    assert sum(rate) == answered - 1


def test_participants_show_gold_accuracy_agreement_and_the_gold_screen_out(world, factory, db):
    study, made = three_judges(world, db, factory)
    designer = factory.client(world.owner)
    listed = designer.get(f"/api/studies/{study.id}/participants").json()
    rows = {r["external_id"]: r for r in listed}
    assert set(rows) == {"careful-1", "careful-2", "careless"}
    careless = rows["careless"]
    assert careless["outcome"] == "screened_out" and careless["screenout_reason"] == "gold"
    assert careless["judging"]["gold_accuracy"] == 0.0
    assert careless["judging"]["gold_answered"] == 2 and careless["judging"]["gold_correct"] == 0
    assert careless["judging"]["answered"] == made["careless"]
    for pid in ("careful-1", "careful-2"):
        judged = rows[pid]["judging"]
        assert judged["answered"] == 4 and judged["gold_accuracy"] == 1.0
        assert judged["gold_correct"] == judged["gold_answered"] >= 1
        assert rows[pid]["screenout_reason"] is None and rows[pid]["outcome"] is None
    assert rows["careful-2"]["judging"]["agreement"] == 1.0

    res = designer.get(f"/api/studies/{study.id}/participants.csv")
    assert res.status_code == 200
    table = list(csv.DictReader(io.StringIO(res.text)))
    header = res.text.splitlines()[0].split(",")
    assert header[0] == "external_id" and "episodes_completed" not in header
    by_id = {r["external_id"]: r for r in table}
    assert by_id["careless"]["screenout_reason"] == "gold"
    assert by_id["careless"]["gold_accuracy"] == "0.0000"
    assert by_id["careful-2"]["judgements_answered"] == "4"
    assert by_id["careful-2"]["gold_accuracy"] == "1.0000"
    assert by_id["careful-2"]["agreement"] == "1.0000"

    # a play study's list and CSV are as they were: no judging
    play = factory.study(world.owner)
    assert all(r["judging"] is None for r in designer.get(
        f"/api/studies/{world.source.id}/participants").json())  # fmt: skip
    plain = designer.get(f"/api/studies/{play.id}/participants.csv").text.splitlines()[0]
    assert "episodes_completed" in plain and "gold_accuracy" not in plain


def _parquet(content: bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(content))


def test_the_preference_dataset_has_every_judgement_in_the_schema(world, factory, db):
    study, made = three_judges(world, db, factory)
    designer = factory.client(world.owner)
    # the designer's preview as a participant judges too: in the dataset, marked is_test
    preview = designer.post(f"/api/studies/{study.id}/preview-participant",
                            json={"platform": "prolific"})  # fmt: skip
    assert preview.status_code == 200, preview.text
    item = designer.get("/api/play/judge/next", headers={
        "X-Play-Ticket": preview.json()["ticket"]}).json()["item"]  # fmt: skip
    body = {"choice": "equal"} if item["question"]["kind"] == "compare" else {"rating": 2}
    res = designer.post(f"/api/play/judge/{item['token']}/answer", json=body,
                        headers={"X-Play-Ticket": preview.json()["ticket"]})  # fmt: skip
    assert res.status_code == 200, res.text
    answered = db.scalars(select(Judgement.id).where(
        Judgement.study_id == study.id, Judgement.answered_at.is_not(None))).all()  # fmt: skip
    assert len(answered) == sum(made.values()) + 1

    jsonl = designer.get(f"/api/studies/{study.id}/feedback/preferences.jsonl")
    assert jsonl.status_code == 200, jsonl.text
    assert jsonl.headers["content-type"].startswith("application/x-ndjson")
    assert f'filename="study-{study.id}-preferences.jsonl"' in jsonl.headers["content-disposition"]
    lines = [json.loads(line) for line in jsonl.text.splitlines()]
    assert [r["judgement_id"] for r in lines] == sorted(answered)
    assert all(list(r) == dataset.SCHEMA.names for r in lines)

    parquet = designer.get(f"/api/studies/{study.id}/feedback/preferences.parquet")
    assert parquet.status_code == 200
    assert f'filename="study-{study.id}-preferences.parquet"' in parquet.headers[
        "content-disposition"]  # fmt: skip
    table = _parquet(parquet.content)
    assert table.schema.equals(dataset.SCHEMA)
    assert table.to_pylist() == lines  # the same rows in the same order
    rows = {r["judgement_id"]: r for r in lines}
    people = {p.id: p for p in db.scalars(select(Participant).where(
        Participant.study_id == study.id))}  # fmt: skip
    for j in db.scalars(select(Judgement).where(Judgement.id.in_(answered))):
        row = rows[j.id]
        assert row["participant"] == people[j.participant_id].external_id
        assert row["is_gold"] == j.item.is_gold and row["question_id"] == j.item.question_key
        assert (row["episode_a"], row["a_start"], row["a_end"]) == (
            j.item.episode_a, j.item.a_start, j.item.a_end)  # fmt: skip
        assert row["answer_ms"] == j.answer_ms and row["correct"] == j.correct
    assert sum(r["is_test"] for r in lines) == 1
    assert {r["participant"] for r in lines if r["screened_out"]} == {"careless"}
    assert {r["correct"] for r in lines if r["participant"] == "careless" and r["is_gold"]} == {
        False}  # fmt: skip
    # the figures leave the preview out; the quota too
    assert designer.get(f"/api/studies/{study.id}/feedback").json()["answered"] == len(lines) - 1


def test_before_any_judgement_the_files_are_empty_and_the_figures_zero(world, factory, db):
    study = world.make(db, factory)
    designer = factory.client(world.owner)
    fig = designer.get(f"/api/studies/{study.id}/feedback").json()
    assert fig["answered"] == 0 and fig["agreement"] is None and fig["pairs"] == 0
    assert fig["per_minute"] == [0] * 10 and fig["quota"]["total"] is None
    assert fig["pool_episodes"] == 5 and fig["items"] == 0
    assert designer.get(f"/api/studies/{study.id}/feedback/preferences.jsonl").content == b""
    table = _parquet(designer.get(f"/api/studies/{study.id}/feedback/preferences.parquet").content)
    assert table.num_rows == 0 and table.schema.equals(dataset.SCHEMA)


URLS = ("/feedback", "/feedback/preferences.jsonl", "/feedback/preferences.parquet")


def test_only_the_studys_designer_reads_its_judgements(world, factory, db):
    study = gold_study(world, db, factory)
    anon = factory.client()
    ticket = join(anon, study, "peeker")
    judge(anon, db, ticket, gold_right=True)
    stranger = factory.client(factory.user())
    for url in URLS:
        path = f"/api/studies/{study.id}{url}"
        assert stranger.get(path).status_code == 404, url  # existence is not leaked
        assert anon.get(path).status_code == 401, url  # no login
        assert anon.get(path, headers=ticket).status_code == 401, url  # a participant's ticket
        assert factory.client(world.owner).get(path).status_code == 200, url
        # a play study has no judgements; an unknown id, a bad one
        play = factory.client(world.owner).get(f"/api/studies/{world.source.id}{url}")
        assert play.status_code == 409 and play.json()["code"] == "not_feedback", url
        assert factory.client(world.owner).get(f"/api/studies/999999{url}").status_code == 404
        assert factory.client(world.owner).get(f"/api/studies/0{url}").status_code == 422


def test_the_live_dashboard_carries_the_judging(world, factory, db):
    study, made = three_judges(world, db, factory)
    designer = factory.client(world.owner)
    live = designer.get(f"/api/studies/{study.id}/live").json()
    assert live["kind"] == "feedback" and live["quotas"] == []
    fb = live["feedback"]
    assert fb["answered"] == sum(made.values()) and fb["per_minute"][-1] == fb["answered"]
    assert fb["agreement"] == 1.0 and fb["participants"]["active"] == 2
    assert fb["quota"]["total"] == 40 and 0 < fb["quota"]["counted"] < fb["answered"]
    # a judge who is done and takes the code is no longer active
    person = db.scalar(select(Participant).where(Participant.external_id == "careful-1"))
    person.completed_at = utcnow()
    db.commit()
    again = designer.get(f"/api/studies/{study.id}/live").json()["feedback"]["participants"]
    assert again["active"] == 1 and again["completed"] == 1
    played_live = designer.get(f"/api/studies/{world.source.id}/live").json()
    assert played_live["kind"] == "play" and played_live["feedback"] is None


def test_the_dashboard_recomputes_agreement_at_most_every_ten_seconds(
    world, factory, db, monkeypatch
):  # type: ignore[no-untyped-def]
    # ten judges an item: the judges after the first three are given the items they began
    study, made = three_judges(world, db, factory, judgements_per_item=10)
    designer = factory.client(world.owner)
    live = f"/api/studies/{study.id}/live"
    assert designer.get(live).json()["feedback"]["agreement"] == 1.0
    # a judge who answers the other way on the items the careful two judged
    contrary = judge(factory.client(), db, join(factory.client(), study, "contrary"), True,
                     prefer="b", rating=1)  # fmt: skip
    ticked = designer.get(live).json()["feedback"]
    assert ticked["answered"] == sum(made.values()) + contrary  # the counts are of this tick
    assert ticked["agreement"] == 1.0  # agreement: the figure of under ten seconds ago
    now = designer.get(f"/api/studies/{study.id}/feedback").json()  # always fresh
    assert now["agreement"] < 1.0 and now["answered"] == ticked["answered"]
    assert designer.get(live).json()["feedback"]["agreement"] == now["agreement"]
    contrary = judge(factory.client(), db, join(factory.client(), study, "contrary-2"), True,
                     prefer="b", rating=1)  # fmt: skip
    monkeypatch.setattr(summary, "AGREEMENT_EVERY_S", 0.0)  # ten seconds have passed
    later = designer.get(live).json()["feedback"]
    assert later["pairs"] > now["pairs"] and later["answered"] == now["answered"] + contrary
    fresh = designer.get(f"/api/studies/{study.id}/feedback").json()
    assert (later["agreement"], later["pairs"]) == (fresh["agreement"], fresh["pairs"])
