"""A played study with real recorded CartPole episodes and a feedback study over them, for
the judging API and browser tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from server.models import Episode, Study, StudyState, User
from server.services.studies import studies
from server.study_spec import StudySpec
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.export.recordings import Recording
from tests.factories import Factory

PROLIFIC = {"STUDY_ID": "fb-study", "SESSION_ID": "fb-session"}


def feedback_spec(source_id: int, **feedback: Any) -> dict[str, Any]:
    """A feedback study over ``source_id``'s CartPole episodes: a compare and a rate question."""
    return {
        "name": "Which is better?",
        "kind": "feedback",
        "instructions": "Watch each clip, then answer.",
        "crowd": {"completion_code": "JUDGED0K", "screenout_code": "GOLDMISS",
                  "full_code": "NOMORE00"},
        "feedback": {
            "source": {"studies": [source_id], "environments": ["cartpole"]},
            "questions": [
                {"id": "balance", "kind": "compare", "prompt": "Which pole stays up longer?"},
                {"id": "smooth", "kind": "rate", "prompt": "How smooth is the cart?",
                 "scale_min": 1, "scale_max": 5, "low_label": "jerky", "high_label": "smooth"},
            ],
            "min_watch_s": 0,
            "gold_rate": 0,
            "judgements_per_participant": 4,
            **feedback,
        },
    }  # fmt: skip


@dataclass
class Judged:
    owner: User
    source: Study
    episodes: list[Episode]
    study: Study | None = None

    def make(self, db: Session, factory: Factory, active: bool = True, **feedback: Any) -> Study:
        spec = StudySpec.model_validate(feedback_spec(self.source.id, **feedback))
        study = studies.create_study(db, self.owner.id, spec)
        if active:
            study = studies.change_state(db, study, StudyState.active)
        self.study = study
        return study


def played(db: Session, factory: Factory, data_root: Any,
           recorded: dict[str, list[Recording]]) -> Judged:  # fmt: skip
    """The designer's played study holding the five recorded CartPole episodes."""
    owner = factory.user()
    source = factory.study(owner, two_env_spec("Played"))
    put = Inserter(db, data_root)
    eps = [put.add(source, rec, participant=f"player-{n}")
           for n, rec in enumerate(recorded["cartpole"])]  # fmt: skip
    return Judged(owner, source, eps)
