"""Judging in a feedback study, on the real database: items drawn from a played study's
episodes, K judges per item, gold at its rate and screening, answers refused twice, too
fast, unassigned or after the study closed, and what the judgements add up to."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from server.errors import Conflict, Invalid, NotFound
from server.models import Episode, EpisodeStatus, Participant, StudyState
from server.services.feedback import items, judging, results
from server.services.feedback.judging import Answer
from server.study_spec.feedback import FeedbackSpec
from tests.player.conftest import counter_env, spec


@pytest.fixture
def played(factory, db):  # type: ignore[no-untyped-def]
    """A played study with six completed episodes of 20 steps (rows; logs play no part)."""
    owner = factory.user()
    study = factory.study(owner, spec(counter_env()))
    env = study.environments[0]
    eps = []
    for n in range(6):
        ep = Episode(study_id=study.id, study_env_id=env.id, env_key=env.env_key,
                     status=EpisodeStatus.completed, steps=20, total_reward=float(n),
                     storage_path=f"episodes/{study.id}/{n}")  # fmt: skip
        db.add(ep)
        eps.append(ep)
    db.commit()
    return owner, study, eps


def feedback(played, **extra):  # type: ignore[no-untyped-def]
    owner, source, eps = played
    data = {
        "source": {"studies": [source.id]},
        "questions": [{"id": "closer", "kind": "compare", "prompt": "Which is closer?"},
                      {"id": "score", "kind": "rate", "prompt": "How good?",
                       "scale_min": 1, "scale_max": 5}],
        "min_watch_s": 0,
        "gold_rate": 0,
        **extra,
    }  # fmt: skip
    return FeedbackSpec.model_validate(data)


def judge_study(factory, owner):  # type: ignore[no-untyped-def]
    study = factory.study(owner, spec(counter_env()))
    study.state = StudyState.active
    return study


def person(db, study, name: str) -> Participant:  # type: ignore[no-untyped-def]
    row = Participant(study_id=study.id, external_id=name, platform="prolific")
    db.add(row)
    db.commit()
    return row


def answer_all(db, study, fs, who, choice="left", rating=3.0):  # type: ignore[no-untyped-def]
    """Answer every item the participant is given until they are done; the judgements."""
    done = []
    rng = random.Random(who.id)
    while (j := judging.draw(db, study, fs, who, rng)) is not None:
        kind = j.item.kind
        given = Answer(choice=choice) if kind == "compare" else Answer(rating=rating)
        done.append(judging.answer(db, study, fs, who, j.token, given))
    return done


def test_each_item_gets_k_judges_and_a_participant_stops_at_their_count(factory, db, played):
    fs = feedback(played, judgements_per_item=2, judgements_per_participant=4)
    study = judge_study(factory, played[0])
    db.commit()
    people = [person(db, study, f"p{n}") for n in range(5)]
    for who in people:
        assert len(answer_all(db, study, fs, who)) == 4
    per_item = judging._load(db, study.id)
    assert max(per_item.values()) <= 2
    # a participant never judges one item twice, and both questions are asked
    for who in people:
        mine = list(db.query(judging.Judgement).filter_by(participant_id=who.id))
        assert len({j.item_id for j in mine}) == len(mine)
        assert {j.item.question_key for j in mine} == {"closer", "score"}
    # compare items pair two episodes of the one environment
    pair = db.query(items.FeedbackItem).filter_by(kind="compare").first()
    assert pair.episode_b is not None and pair.episode_a != pair.episode_b


def test_an_open_item_comes_back_on_a_reload_and_counts_once(factory, db, played):
    fs = feedback(played, min_watch_s=5)
    study = judge_study(factory, played[0])
    who = person(db, study, "p1")
    first = judging.draw(db, study, fs, who)
    again = judging.draw(db, study, fs, who)
    assert first is not None and again is not None and again.token == first.token
    given = Answer(choice="left") if first.item.kind == "compare" else Answer(rating=2)
    with pytest.raises(Conflict) as fast:
        judging.answer(db, study, fs, who, first.token, given)
    assert fast.value.code == "too_fast" and 0 < fast.value.detail["retry_after_s"] <= 5
    later = first.assigned_at + timedelta(seconds=6)
    judging.answer(db, study, fs, who, first.token, given, now=later)
    with pytest.raises(Conflict) as twice:
        judging.answer(db, study, fs, who, first.token, given, now=later)
    assert twice.value.code == "already_answered"
    assert judging.answered_count(db, who.id) == 1
    other = person(db, study, "p2")
    with pytest.raises(NotFound):  # someone else's item: not theirs to answer
        judging.answer(db, study, fs, other, first.token, given, now=later)


def test_answers_are_checked_and_translated_from_the_sides_shown(factory, db, played):
    fs = feedback(played, questions=[{"id": "q", "kind": "compare", "prompt": "Better?"}])
    study = judge_study(factory, played[0])
    who = person(db, study, "p1")
    j = judging.draw(db, study, fs, who, random.Random(3))
    with pytest.raises(Invalid) as bad:
        judging.answer(db, study, fs, who, j.token, Answer(choice="up"))
    assert bad.value.detail[0]["loc"] == ["body", "choice"]
    done = judging.answer(db, study, fs, who, j.token, Answer(choice="left"))
    # "left" is the clip shown on the left: b when the item was shown swapped
    assert done.choice == ("b" if done.swapped else "a")
    rate = feedback(played, questions=[{"id": "r", "kind": "rate", "prompt": "Good?",
                                        "scale_min": 1, "scale_max": 5}])  # fmt: skip
    j2 = judging.draw(db, study, rate, person(db, study, "p2"))
    who2 = db.get(Participant, j2.participant_id)
    for wrong in (0.0, 6.0, 2.5, float("nan")):
        with pytest.raises(Invalid):
            judging.answer(db, study, rate, who2, j2.token, Answer(rating=wrong))
    assert judging.answer(db, study, rate, who2, j2.token, Answer(rating=5)).rating == 5.0


def test_no_answers_after_the_study_closed(factory, db, played):
    fs = feedback(played)
    study = judge_study(factory, played[0])
    who = person(db, study, "p1")
    j = judging.draw(db, study, fs, who)
    study.state = StudyState.closed
    db.commit()
    with pytest.raises(Conflict) as closed:
        judging.answer(db, study, fs, who, j.token, Answer(choice="left", rating=3))
    assert closed.value.code == "study_closed"
    assert judging.answered_count(db, who.id) == 0


def test_gold_comes_at_its_rate_and_a_careless_participant_is_screened_out(factory, db, played):
    _, _, eps = played
    gold = [{"question": "closer", "episodes": [eps[0].id, eps[1].id], "answer": "a"},
            {"question": "closer", "episodes": [eps[2].id, eps[3].id], "answer": "b"}]  # fmt: skip
    fs = feedback(played, questions=[{"id": "closer", "kind": "compare", "prompt": "Closer?"}],
                  gold=gold, gold_rate=0.5, judgements_per_participant=4,
                  gold_min_accuracy=0.75, gold_min_answers=2)  # fmt: skip
    study = judge_study(factory, played[0])
    careful, careless = person(db, study, "careful"), person(db, study, "careless")
    rng = random.Random(0)
    while (j := judging.draw(db, study, fs, careful, rng)) is not None:
        right = j.item.gold_answer if j.item.is_gold else "a"
        shown = {"a": "right" if j.swapped else "left", "b": "left" if j.swapped else "right"}
        judging.answer(db, study, fs, careful, j.token, Answer(choice=shown[right]))
    record = judging.gold_record(db, careful.id)
    assert record == (2, 2)  # ceil(0.5 x 4) gold of its 4 items, both right
    assert careful.screened_out_at is None
    while (j := judging.draw(db, study, fs, careless, rng)) is not None:
        if careless.screened_out_at is not None:
            break
        wrong = {"a": "b", "b": "a"}.get(j.item.gold_answer or "", "a")
        shown = {"a": "right" if j.swapped else "left", "b": "left" if j.swapped else "right"}
        judging.answer(db, study, fs, careless, j.token, Answer(choice=shown[wrong]))
    db.refresh(careless)
    assert careless.screenout_reason == "gold"
    assert judging.gold_record(db, careless.id) == (2, 0)
    quality = results.agreement(db, study, fs)["participants"]
    assert quality[careful.id]["gold_accuracy"] == 1.0
    assert quality[careless.id]["gold_accuracy"] == 0.0


def test_every_pair_of_a_small_set_and_disagreement_first(factory, db, played):
    fs = feedback(played, pairing="all_pairs", judgements_per_item=1,
                  judgements_per_participant=100,
                  questions=[{"id": "q", "kind": "compare", "prompt": "Better?"}])  # fmt: skip
    study = judge_study(factory, played[0])
    assert len(answer_all(db, study, fs, person(db, study, "p1"))) == 15  # 6 choose 2
    # disagreement: an item two judges split on comes before a fresh one
    fs2 = feedback(played, pairing="disagreement", judgements_per_item=3,
                   questions=[{"id": "q", "kind": "compare", "prompt": "Better?"}])  # fmt: skip
    study2 = judge_study(factory, played[0])
    a, b, c = (person(db, study2, n) for n in ("a", "b", "c"))
    ja = judging.draw(db, study2, fs2, a)
    judging.answer(db, study2, fs2, a, ja.token, Answer(choice="left"))
    jb = judging.draw(db, study2, fs2, b)
    assert jb.item_id == ja.item_id  # the begun item is filled first
    shown_b = "right" if jb.swapped == ja.swapped else "left"  # the other episode than a's
    judging.answer(db, study2, fs2, b, jb.token, Answer(choice=shown_b))
    assert judging.disagreement(db, [ja.item_id]) == {ja.item_id: 0.5}
    assert judging.draw(db, study2, fs2, c).item_id == ja.item_id


def test_a_deleted_episode_is_skipped_and_its_judgements_kept(factory, db, played):
    _, _, eps = played
    fs = feedback(played, questions=[{"id": "r", "kind": "rate", "prompt": "Good?"}],
                  judgements_per_item=1)  # fmt: skip
    study = judge_study(factory, played[0])
    who = person(db, study, "p1")
    j = judging.draw(db, study, fs, who)
    gone = db.get(Episode, j.item.episode_a)
    db.delete(gone)
    db.commit()
    nxt = judging.draw(db, study, fs, who)  # the open item's episode is gone: another one
    assert nxt is not None and nxt.item.episode_a != gone.id
    judging.answer(db, study, fs, who, nxt.token, Answer(rating=4))
    assert results.preference_rows(db, study, fs)[0]["rating"] == 4.0


def test_summaries_count_wins_losses_and_ratings_per_episode(factory, db, played):
    _, _, eps = played
    fs = feedback(played, judgements_per_item=5, judgements_per_participant=6)
    study = judge_study(factory, played[0])
    people = [person(db, study, f"p{n}") for n in range(3)]
    for who in people:
        answer_all(db, study, fs, who, choice="left", rating=4)
    rows = results.preference_rows(db, study, fs)
    assert len(rows) == 18 and {r["participant"] for r in rows} == {"p0", "p1", "p2"}
    summary = results.episode_summaries(db, [e.id for e in eps])
    compares = [r for r in rows if r["question_kind"] == "compare"]
    assert sum(s["wins"] for s in summary.values()) == len(compares)
    assert sum(s["losses"] for s in summary.values()) == len(compares)
    rated = [s for s in summary.values() if s["ratings"]]
    assert rated and all(s["mean_rating"] == 4.0 for s in rated)
    for r in compares:
        assert r["preferred_episode"] == (r["episode_a"] if r["left"] == "a" else r["episode_b"])
    assert results.agreement(db, study, fs)["agreement"] is not None


def test_the_spec_refuses_what_cannot_be_judged():
    base = {"source": {"studies": [1]},
            "questions": [{"id": "q", "kind": "rate", "prompt": "Good?"}]}  # fmt: skip
    FeedbackSpec.model_validate(base)
    for bad in (
        {"questions": [{"id": "q", "kind": "rate", "prompt": "x", "scale_min": 3, "scale_max": 3}]},
        {"questions": [{"id": "q", "kind": "compare", "prompt": "  "}]},
        {"gold": [{"question": "q", "episodes": ["0" * 32], "rating_min": 9, "rating_max": 9}]},
        {"gold": [{"question": "nope", "episodes": ["0" * 32]}]},
        {"gold_rate": 0.9},
        {"source": {"studies": [1, 1]}},
        {"questions": [{"id": "q", "kind": "narrate", "prompt": "say\x07"}]},
    ):
        with pytest.raises(ValueError):
            FeedbackSpec.model_validate({**base, **bad})


def test_the_preference_dataset_holds_every_judgement_in_both_files(factory, db, played, tmp_path):
    import json

    import pyarrow.parquet as pq

    from server.services.feedback import dataset

    fs = feedback(played, judgements_per_participant=3)
    study = judge_study(factory, played[0])
    for n in range(2):
        answer_all(db, study, fs, person(db, study, f"p{n}"))
    rows = results.preference_rows(db, study, fs)
    jsonl, parquet = dataset.write(rows, tmp_path / "prefs")
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    table = pq.read_table(parquet)
    assert table.schema == dataset.SCHEMA
    assert lines == rows == table.to_pylist()
    with pytest.raises(ValueError):
        dataset.write([{**rows[0], "extra": 1}], tmp_path / "bad")


def test_a_removed_question_withdraws_its_open_item(factory, db, played):
    fs = feedback(played, questions=[{"id": "r", "kind": "rate", "prompt": "Good?"}])
    study = judge_study(factory, played[0])
    who = person(db, study, "p1")
    j = judging.draw(db, study, fs, who)
    edited = feedback(played, questions=[{"id": "c", "kind": "compare", "prompt": "Better?"}])
    with pytest.raises(Conflict) as gone:
        judging.answer(db, study, edited, who, j.token, Answer(rating=3))
    assert gone.value.code == "item_withdrawn"
    assert judging.draw(db, study, edited, who).item.question_key == "c"


def test_a_burst_of_judges_at_once_holds_k_and_a_doubled_answer_counts_once(
    factory, db, engine, played
):  # type: ignore[no-untyped-def]
    """Twelve judges draw and answer at the same moment, each from its own connection, and
    then one of them sends the same answer twice at once (two tabs): no item gets more than
    K judges, nobody judges an item twice, and the doubled answer is recorded once."""
    import threading

    from server.core.db import make_sessionmaker

    fs = feedback(played, judgements_per_item=2, judgements_per_participant=3)
    study = judge_study(factory, played[0])
    db.commit()
    people = [person(db, study, f"burst-{n}") for n in range(12)]
    sessions = make_sessionmaker(engine)
    barrier = threading.Barrier(len(people))
    errors: list[BaseException] = []

    def judge(pid: int) -> None:
        try:
            with sessions() as own:
                who = own.get(Participant, pid)
                barrier.wait()
                answer_all(own, own.merge(study), fs, who)
        except BaseException as exc:  # noqa: BLE001 - reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=judge, args=(p.id,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db.expire_all()
    assert max(judging._load(db, study.id).values()) <= 2
    for who in people:
        mine = list(db.query(judging.Judgement).filter_by(participant_id=who.id))
        assert len({j.item_id for j in mine}) == len(mine) <= 3

    late = person(db, study, "two-tabs")
    open_one = judging.draw(db, study, fs, late)
    assert open_one is not None
    token, kind = open_one.token, open_one.item.kind
    given = Answer(choice="left") if kind == "compare" else Answer(rating=2.0)
    twice = threading.Barrier(2)
    outcomes: list[str] = []

    def send() -> None:
        with sessions() as own:
            twice.wait()
            try:
                judging.answer(own, own.merge(study), fs, own.get(Participant, late.id), token,
                               given)  # fmt: skip
                outcomes.append("ok")
            except Conflict as exc:
                outcomes.append(exc.code or "")

    pair = [threading.Thread(target=send) for _ in range(2)]
    for t in pair:
        t.start()
    for t in pair:
        t.join()
    assert sorted(outcomes) == ["already_answered", "ok"]
    db.expire_all()
    rows = list(db.query(judging.Judgement).filter_by(participant_id=late.id))
    assert [r.answered_at is not None for r in rows] == [True]
