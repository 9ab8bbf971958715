"""Judgements made through the judge API on a played study's real recorded episodes, and
what each episode's summary must then be, counted here from the answers given (not by the
results service): the fixture of the judgement export, episodes list and replay tests."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import cycle
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.export.judgements import JudgementSummary
from server.models import Judgement, Study
from tests.api.routes.judged import PROLIFIC
from tests.factories import Factory

# per participant, the answers in the order the items come: compare choices, ratings
PLAN: dict[str, tuple[Sequence[str], Sequence[float]]] = {
    "judge-a": (("left", "left", "right"), (1.0, 2.0, 2.0)),
    "judge-b": (("right", "equal", "left"), (5.0, 4.0, 1.0)),
    "judge-c": (("left", "cant_tell", "right"), (3.0, 2.0, 5.0)),
}


def judge(db: Session, factory: Factory, study: Study,
          plan: dict[str, tuple[Sequence[str], Sequence[float]]] = PLAN
          ) -> dict[str, JudgementSummary]:  # fmt: skip
    """Each participant of ``plan`` joins from a Prolific link and answers every item the API
    gives them (compare: the next choice, rate: the next rating, each list in turn); the
    summaries the answers make, by episode id (an episode never judged is absent)."""
    tally: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"wins": 0, "losses": 0, "ties": 0, "ratings": []}
    )
    for pid, (choices, ratings) in plan.items():
        client = factory.client()
        params = {"PROLIFIC_PID": pid, **PROLIFIC}
        res = client.post("/api/play/join", json={"token": study.permalink_token, "params": params})
        assert res.status_code == 200, res.text
        joined = res.json()
        headers = {"X-Play-Ticket": joined["ticket"], "X-Browser-Key": joined["browser_key"]}
        left, rates = cycle(choices), cycle(ratings)
        while True:
            nxt = client.get("/api/play/judge/next", headers=headers)
            assert nxt.status_code == 200, nxt.text
            item = nxt.json()["item"]
            if item is None:
                break
            row = db.scalar(select(Judgement).where(Judgement.token == item["token"]))
            assert row is not None
            shown = [row.item.episode_a, row.item.episode_b]
            if row.swapped:
                shown.reverse()
            if item["question"]["kind"] == "compare":
                choice = next(left)
                body: dict[str, Any] = {"choice": choice}
                if choice in ("left", "right"):
                    winner = shown[0] if choice == "left" else shown[1]
                    loser = shown[1] if choice == "left" else shown[0]
                    tally[str(winner)]["wins"] += 1
                    tally[str(loser)]["losses"] += 1
                elif choice == "equal":
                    for eid in shown:
                        tally[str(eid)]["ties"] += 1
            else:
                rating = next(rates)
                body = {"rating": rating}
                tally[str(row.item.episode_a)]["ratings"].append(rating)
            answered = client.post(f"/api/play/judge/{item['token']}/answer", json=body,
                                   headers=headers)  # fmt: skip
            assert answered.status_code == 200, answered.text
            db.expire_all()
    return {
        eid: JudgementSummary(
            wins=t["wins"],
            losses=t["losses"],
            ties=t["ties"],
            ratings=len(t["ratings"]),
            mean_rating=sum(t["ratings"]) / len(t["ratings"]) if t["ratings"] else None,
        )
        for eid, t in tally.items()
    }
