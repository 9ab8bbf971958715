"""Dataset edits on the real database and real recordings: the preview applies them (an
exclusion left out and listed with its reason, a trim's steps counted after it, a task's
relabel shown), two sessions trimming one episode at once get one edit and one 409 naming
the first's author, and a PUT replaces an edit as the replacer's."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy.orm import Session

from server.errors import Conflict, DomainError, Invalid
from server.models import Dataset
from server.schemas.dataset_edits import DatasetEditCreate, EditValues
from server.schemas.datasets import DatasetCreate
from server.services.datasets import datasets, edits, preview
from tests.api.routes.recorded import dataset_studies

NONE = {"by": "none", "train": 1.0, "validation": 0.0, "test": 0.0, "seed": 0}


def _dataset(db, owner, studies) -> Dataset:  # type: ignore[no-untyped-def]
    body = {"name": "set", "sources": [{"study_id": s.id} for s in studies], "split": NONE}
    return datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(body))


def _edit(db, settings, dataset, author, **body):  # type: ignore[no-untyped-def]
    made = DatasetEditCreate.model_validate(body)
    where = {"secret_key": settings.secret_key, "data_root": settings.data_root}
    return edits.create_edit(db, dataset, author.id, made, **where)


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    cp = recorded["cartpole"]
    return {"owner": owner, "main": main, "dataset": _dataset(db, owner, [pilot, main]),
            "cp": cp}  # fmt: skip


def test_the_preview_counts_what_the_edits_leave(world, db, settings) -> None:  # type: ignore[no-untyped-def]
    owner, dataset, cp = world["owner"], world["dataset"], world["cp"]
    before = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    # recordings 0 (red), 2 (blue), 3, 4: the excluded-in-review 1 is not selected
    assert [a["episode_id"] for a in before["assignments"]] == [cp[i].episode_id
                                                               for i in (0, 2, 3, 4)]  # fmt: skip
    _edit(db, settings, dataset, owner, kind="trim", episode_id=cp[0].episode_id,
          trim_start=2, trim_end=1)  # fmt: skip
    _edit(db, settings, dataset, owner, kind="relabel", task_key="red",
          instruction="Push the cart right, gently.")  # fmt: skip
    _edit(db, settings, dataset, owner, kind="exclude", episode_id=cp[3].episode_id,
          reason="the pole was knocked")  # fmt: skip
    out = preview.preview(db, dataset, settings.secret_key, settings.data_root)

    assert out["episodes"] == 3
    assert out["steps"] == before["steps"] - 3 - cp[3].num_steps
    assert out["splits"][0]["steps"] == out["steps"]
    assert out["edits"]["excluded"] == [{
        "episode_id": cp[3].episode_id, "study_id": world["main"].id,
        "split": "train", "steps": cp[3].num_steps, "reason": "the pole was knocked",
    }]  # fmt: skip
    assert (out["edits"]["trimmed"], out["edits"]["steps_trimmed"]) == (1, 3)
    assert out["edits"]["relabelled"] == {"red": "Push the cart right, gently."}
    first = out["assignments"][0]
    assert first["episode_id"] == cp[0].episode_id
    assert (first["recorded_steps"], first["steps"]) == (cp[0].num_steps, cp[0].num_steps - 3)
    assert (first["trim_start"], first["trim_end"]) == (2, 1)
    assert first["relabel"] == "Push the cart right, gently."
    assert out["assignments"][1]["relabel"] is None  # blue: its own instruction
    tasks = {r["label"]: r for r in out["tasks"]}
    assert tasks["red"]["relabel"] == "Push the cart right, gently."
    assert tasks["red"]["steps"] == cp[0].num_steps - 3 and tasks["blue"]["relabel"] is None
    assert tasks["no task"]["episodes"] == 1  # 3 excluded, 4 kept
    # removing the exclusion brings it back, in the split it had
    excluded = next(e for e in edits.edits_of(db, dataset) if e.kind == "exclude")
    edits.delete_edit(db, dataset, excluded.id)
    again = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert again["episodes"] == 4 and again["edits"]["excluded"] == []


def test_an_episodes_relabel_wins_over_its_tasks(world, db, settings) -> None:  # type: ignore[no-untyped-def]
    owner, dataset, cp = world["owner"], world["dataset"], world["cp"]
    _edit(db, settings, dataset, owner, kind="relabel", task_key="red", instruction="Task's.")
    _edit(db, settings, dataset, owner, kind="relabel", episode_id=cp[0].episode_id,
          instruction="Its own.")  # fmt: skip
    out = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert out["assignments"][0]["relabel"] == "Its own."


def test_two_sessions_trimming_one_episode_at_once_get_one_edit_and_a_409(  # type: ignore[no-untyped-def]
    world, db, engine, settings, factory
) -> None:
    owner, dataset, cp = world["owner"], world["dataset"], world["cp"]
    other = factory.user(email="second@example.com")  # a second author, by the service
    gate = threading.Barrier(2)
    results: dict[str, Any] = {}

    def trim(name: str, author_id: int, start: int) -> None:
        with Session(engine) as session:
            mine = session.get(Dataset, dataset.id)
            assert mine is not None
            body = DatasetEditCreate(kind="trim", episode_id=cp[0].episode_id, trim_start=start)
            gate.wait()
            try:
                edit = edits.create_edit(session, mine, author_id, body,
                                         secret_key=settings.secret_key,
                                         data_root=settings.data_root)  # fmt: skip
                results[name] = edit.trim_start
            except DomainError as exc:
                results[name] = exc

    threads = [threading.Thread(target=trim, args=("a", owner.id, 1)),
               threading.Thread(target=trim, args=("b", other.id, 2))]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    conflicts = [r for r in results.values() if isinstance(r, Conflict)]
    made = [r for r in results.values() if isinstance(r, int)]
    assert len(conflicts) == 1 and len(made) == 1, results
    rows = [e for e in edits.edits_of(db, dataset) if e.kind == "trim"]
    assert [r.trim_start for r in rows] == made  # the first one stays, not overwritten
    winner = rows[0].author.email
    msg = conflicts[0].message
    assert msg.startswith(f"Episode {cp[0].episode_id} already has a trim by {winner} at ")
    assert "reload" in msg


def test_a_put_replaces_the_values_as_the_replacers(world, db, settings, factory) -> None:  # type: ignore[no-untyped-def]
    owner, dataset, cp = world["owner"], world["dataset"], world["cp"]
    made = _edit(db, settings, dataset, owner, kind="trim", episode_id=cp[0].episode_id,
                 trim_start=1)  # fmt: skip
    when = made.created_at
    other = factory.user(email="later@example.com")
    where = {"secret_key": settings.secret_key, "data_root": settings.data_root}
    got = edits.update_edit(db, dataset, made.id, other.id, EditValues(trim_end=2), **where)
    assert (got.trim_start, got.trim_end, got.author.email) == (0, 2, "later@example.com")
    assert got.created_at >= when
    with pytest.raises(Invalid) as err:  # a field another kind takes
        edits.update_edit(db, dataset, made.id, owner.id, EditValues(reason="x"), **where)
    assert err.value.detail[0]["loc"] == ["body", "reason"]
