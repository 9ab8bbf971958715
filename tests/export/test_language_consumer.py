"""Tasks and narrations in every format, loaded as researchers load them, value for value.

A study whose CartPole environment lists two tasks: three episodes drew one of them (their
rows keep the task and the instruction shown), one drew none (from before the tasks: its
environment's instruction). Narrations are rows of the ``narrations`` table, inserted here
(two overlapping ones, a tie, one reaching past an episode's end tag). The app's own
selection (server/services/exports/selection.py) turns the rows into the exporter's inputs;
TFDS+rlds, LeRobotDataset and minari, each in its consumer venv, read the exports back and
the checks compare every value with what is computed here from the rows and recordings.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np
import pytest

from server.core.security import salted_hash
from server.export import ExportOptions, export_dataset
from server.export.formats.lerobot.dataset import FRAME_KEY
from server.export.narration import JOIN
from server.export.video import decode_jpeg, psnr
from server.models import Episode, Narration, StepTag
from server.schemas.exports import ExportSelection
from server.services.exports import selection as export_selection
from tests.api.routes.recorded import Inserter
from tests.export.conftest import ROOT
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected
from tests.export.recordings import Recording
from tests.export.test_consumer import oxe_expected

pytestmark = pytest.mark.consumer

ENV_INSTRUCTION = "Balance the pole."
TASKS = [
    {"id": "lean-left", "label": "Left", "instruction": "Keep the pole up, drifting left."},
    {"id": "lean-right", "instruction": "Keep the pole up | drifting right."},  # a pipe: text
]
# per episode: the task drawn (None: none) and its narrations (start, end, text) in the order
# they are written; the export joins them in start order (ties: as written)
PLAN: list[tuple[str | None, list[tuple[int, int, str]]]] = [
    ("lean-left", [(3, 6, "push right"), (0, 4, "steady"), (3, 3, "wobble")]),
    ("lean-right", [(1, 1, "nudge")]),
    ("lean-left", []),
    (None, [(0, 9, "the whole episode")]),
]


def spec() -> dict[str, Any]:
    return {
        "name": "Tasks",
        "environments": [
            {
                "id": "cartpole",
                "name": "CartPole",
                "source": {"kind": "gymnasium", "id": "CartPole-v1"},
                "instructions": ENV_INSTRUCTION,
                "tasks": TASKS,
            }
        ],
    }


def instruction_of(task: str | None) -> str:
    return (
        ENV_INSTRUCTION
        if task is None
        else next(t for t in TASKS if t["id"] == task)["instruction"]
    )


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """The study, its four episodes (rows with tasks, instructions, narrations), and what each
    export must hold of them."""
    owner = factory.user()
    study = factory.study(owner, spec())
    ins = Inserter(db, settings.data_root)
    recs: list[Recording] = recorded["cartpole"][:4]
    rows = []
    for i, (rec, (task, narrations)) in enumerate(zip(recs, PLAN, strict=True)):
        row = ins.add(study, rec, minutes_ago=50 - i)
        row.task_key = task
        row.instruction = None if task is None else instruction_of(task)
        for start, end, text in narrations:
            db.add(Narration(episode_id=row.id, start_step=start, end_step=end, text=text))
            db.flush()  # ids in the order written
        rows.append(row)
    db.commit()
    agent = salted_hash(settings.secret_key, "worker-1")
    expected = []
    for rec, (task, narrations) in zip(recs, PLAN, strict=True):
        # the join rule's order, written out: by start step, ties as written
        ordered = sorted(narrations, key=lambda n: n[0])
        expected.append(
            expected_episode(
                rec,
                agent_id=agent,
                task_id=task or "",
                instruction=instruction_of(task),
                narrated=ordered,
            )
        )
    return {
        "owner": owner,
        "client": factory.client(owner),
        "study": study,
        "rows": rows,
        "recs": recs,
        "expected": expected,
    }


def inputs_of(db, settings, world):  # type: ignore[no-untyped-def]
    """The exporter's inputs, as the app makes them of the rows."""
    study = world["study"]
    ids = [r.id for r in world["rows"]]
    episodes = export_selection.resolve(db, study, ExportSelection(episode_ids=ids))
    instructions = export_selection.instructions_of(study)
    return export_selection.episode_inputs(
        db, episodes, settings.secret_key, settings.data_root, instructions
    )


def test_narration_join_rule_as_expected(world) -> None:  # type: ignore[no-untyped-def]
    """The expectation itself, spelled out for the first episode (overlaps and a tie)."""
    narration = list(world["expected"][0]["steps/narration"])
    assert narration[:8] == [
        "steady", "steady", "steady", f"steady{JOIN}push right{JOIN}wobble",
        f"steady{JOIN}push right", "push right", "push right", "",
    ]  # fmt: skip
    assert set(world["expected"][2]["steps/narration"]) == {""}


def test_rlds_per_episode_instruction_and_narrations(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    inputs = inputs_of(db, settings, world)
    assert [(i.task_id, i.instruction) for i in inputs] == [
        (t or "", instruction_of(t)) for t, _n in PLAN
    ]
    result = export_dataset(inputs, ExportOptions(name="ds", study="Tasks"), tmp_path / "out")
    save_expected(tmp_path / "expected.npz", world["expected"])
    report = check_report(
        "rlds", "rlds", "values", str(result.data_dir), str(tmp_path / "expected.npz")
    )
    assert report == {
        "mode": "values",
        "episodes": 4,
        "steps": sum(r.num_steps for r in world["recs"]),
    }
    card = (tmp_path / "out" / "README.md").read_text()
    # per-task counts; the instruction is text in a table cell (its pipe escaped)
    assert "| `lean-left` | Keep the pole up, drifting left. | 2 |" in card
    assert "| `lean-right` | Keep the pole up \\| drifting right. | 1 |" in card
    assert f"| (none) | {ENV_INSTRUCTION} | 1 |" in card
    assert "- Narrations: 5 over 3 episodes" in card


def test_oxe_job_language_instruction_on_every_step(world, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Through the API: an OXE export job of the study (its runner rebuilds the inputs)."""
    from tests.api.routes.test_exports import start, wait_done

    c = world["client"]
    job = start(c, world["study"].id, {"environments": ["cartpole"]}, name="oxe_ds",
                profile="oxe", archive="zip")  # fmt: skip
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        zf.extractall(tmp_path / "x")
    expected = [oxe_expected(want, str(want["language_instruction"])) for want in world["expected"]]
    save_expected(tmp_path / "expected.npz", expected)
    doc = str(ROOT / "docs" / "export.md")
    export = str(tmp_path / "x" / "oxe_ds")
    report = check_report(
        "rlds", "rlds", "oxe", doc, export, "oxe_ds", str(tmp_path / "expected.npz")
    )
    assert report["episodes"] == 4


def test_lerobot_task_per_frame_and_narrations(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    inputs = inputs_of(db, settings, world)
    result = export_dataset(inputs, ExportOptions(name="ds", format="lerobot"), tmp_path / "out")
    expected = []
    for want, rec in zip(world["expected"], world["recs"], strict=True):
        applied = np.asarray([t["applied"] for t in rec.timings], dtype=np.float64)
        times = (applied - applied[0]) / 1000.0
        expected.append({**want, "_times": times, "_task": want["language_instruction"]})
    save_expected(tmp_path / "expected.npz", expected)
    docs = str(ROOT / "docs" / "export.md")
    report = check_report(
        "lerobot", "lerobot", docs, str(result.path), "ds", str(tmp_path / "expected.npz"),
        str(tmp_path / "frames.npz"), timeout=580,
    )  # fmt: skip
    # one row per distinct instruction, in the order first met (the task-less episode: its
    # environment's); one subtask per distinct narration text ("" where none covers a frame)
    assert report["tasks"] == [instruction_of(t) for t in ("lean-left", "lean-right", None)]
    assert report["subtasks"][:4] == [
        "steady",
        f"steady{JOIN}push right{JOIN}wobble",
        f"steady{JOIN}push right",
        "push right",
    ]
    assert "" in report["subtasks"] and "nudge" in report["subtasks"]
    decoded = np.load(tmp_path / "frames.npz")
    for i, rec in enumerate(world["recs"]):
        got = decoded[f"{i}|{FRAME_KEY}"]
        want = [decode_jpeg(f) for f in rec.frames]
        assert min(psnr(g, w) for g, w in zip(got, want, strict=True)) == float("inf")


def test_minari_episode_metadata_and_step_infos(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    inputs = inputs_of(db, settings, world)
    result = export_dataset(inputs, ExportOptions(name="ds", format="minari"), tmp_path / "out")
    save_expected(tmp_path / "expected.npz", world["expected"])
    docs = str(ROOT / "docs" / "export.md")
    report = check_report(
        "minari", "minari", docs, str(result.path), "ds-v1", str(tmp_path / "expected.npz")
    )
    assert report["episodes"] == 4


def test_envlogger_tags_json_names_task_and_narrations(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    inputs = inputs_of(db, settings, world)
    result = export_dataset(inputs, ExportOptions(format="envlogger"), tmp_path / "out")
    save_expected(tmp_path / "expected.npz", world["expected"])
    report = check_report(
        "rlds", "rlds", "envlogger", str(result.path), str(tmp_path / "expected.npz")
    )
    assert report == {"mode": "envlogger", "episodes": 4}
    for row, (task, narrations) in zip(world["rows"], PLAN, strict=True):
        doc = json.loads((result.path / "episodes" / row.id / "tags.json").read_text())
        assert doc["task_id"] == (task or "")
        assert doc["language_instruction"] == instruction_of(task)
        ordered = sorted(narrations, key=lambda n: n[0])
        assert doc["narrations"] == [{"start": s, "end": e, "text": t} for s, e, t in ordered]


def test_narrations_cut_with_the_episode(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An end tag cuts the episode at step 4: a narration reaching past it covers the steps
    kept; one starting after it is left out (no error)."""
    row: Episode = world["rows"][3]
    db.add(Narration(episode_id=row.id, start_step=6, end_step=8, text="after the cut"))
    db.add(StepTag(episode_id=row.id, name="end", start_step=4, end_step=4))
    db.commit()
    inputs = [i for i in inputs_of(db, settings, world) if i.episode_id == row.id]
    options = ExportOptions(name="cut", format="minari", end_tags=("end",), step_tag_names=())
    result = export_dataset(inputs, options, tmp_path / "out")
    cut = expected_episode(
        world["recs"][3],
        agent_id=salted_hash(settings.secret_key, "worker-1"),
        instruction=ENV_INSTRUCTION,
        narrated=[(0, 9, "the whole episode"), (6, 8, "after the cut")],
        step_tags=tuple(inputs[0].step_tags),
        end_tags=("end",),
    )
    assert list(cut["steps/narration"]) == ["the whole episode"] * 5
    save_expected(tmp_path / "expected.npz", [cut])
    docs = str(ROOT / "docs" / "export.md")
    report = check_report(
        "minari", "minari", docs, str(result.path), "cut-v1", str(tmp_path / "expected.npz")
    )
    assert report == {"mode": "minari", "episodes": 1, "steps": 5}
