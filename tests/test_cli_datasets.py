"""``rlds-studio datasets list`` and ``datasets preview ID``, run as a user would (a real
subprocess) on real recordings."""

from __future__ import annotations

import json

from server.core.security import salted_hash
from server.models import DatasetEdit
from server.schemas.datasets import DatasetCreate
from server.services.datasets import datasets
from tests.api.routes.recorded import dataset_studies
from tests.factories import run_cli


def test_list_and_preview_a_dataset(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    body = {"name": "Both", "sources": [{"study_id": pilot.id}, {"study_id": main.id}],
            "split": {"by": "episode", "train": 0.5, "validation": 0.25, "test": 0.25,
                      "seed": 2}}  # fmt: skip
    made = datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(body))

    res = run_cli(settings, "datasets", "list", "--owner", owner.email)
    assert res.returncode == 0, res.stderr
    assert f"{pilot.id},{main.id}" in res.stdout and "episode seed 2" in res.stdout
    assert res.stdout.strip().endswith("1 dataset(s)")

    res = run_cli(settings, "datasets", "preview", str(made.id))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"dataset {made.id} 'Both': 4 episodes, ")
    # four episodes by 0.5 / 0.25 / 0.25: two, one and one
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:5]}
    assert [rows[s][1] for s in ("train", "validation", "test")] == ["2", "1", "1"]
    assert "Pilot" in res.stdout and "Main" in res.stdout and "no task" in res.stdout
    assert salted_hash(settings.secret_key, "worker-1") in res.stdout
    assert "worker-1" not in res.stdout  # pseudonymous

    res = run_cli(settings, "datasets", "preview", "999")
    assert res.returncode != 0 and "no dataset 999" in res.stderr

    # its edits, said after the counts
    cp = recorded["cartpole"]
    for edit in (DatasetEdit(dataset_id=made.id, kind="exclude", episode_id=cp[3].episode_id,
                             reason="knocked", author_id=owner.id),
                 DatasetEdit(dataset_id=made.id, kind="trim", episode_id=cp[0].episode_id,
                             trim_start=1, trim_end=1, author_id=owner.id),
                 DatasetEdit(dataset_id=made.id, kind="relabel", task_key="red",
                             instruction="Gently.", author_id=owner.id)):  # fmt: skip
        db.add(edit)
    db.commit()
    res = run_cli(settings, "datasets", "preview", str(made.id))
    assert res.stdout.splitlines()[0].startswith(f"dataset {made.id} 'Both': 3 episodes, ")
    assert res.stdout.splitlines()[-3:] == [
        f"excluded {cp[3].episode_id} ({cp[3].num_steps} steps): knocked",
        "trimmed: 1 episodes, 2 steps dropped",
        "relabelled task red: Gently.",
    ]


def test_export_a_dataset_with_its_splits(factory, db, settings, recorded, tmp_path) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    body = {"name": "Both", "sources": [{"study_id": pilot.id}, {"study_id": main.id}],
            "split": {"by": "episode", "train": 0.5, "validation": 0.25, "test": 0.25,
                      "seed": 2}}  # fmt: skip
    made = datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(body))
    out = tmp_path / "both"
    res = run_cli(settings, "datasets", "export", str(made.id), "--format", "tfds",
                  "--name", "both", "--out", str(out))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "exported 4 episodes (2 train, 1 validation, 1 test)" in res.stdout
    assert "step" in res.stderr  # the progress bar
    info = json.loads((out / "both" / "1.0.0" / "dataset_info.json").read_text())
    assert [(s["name"], s["shardLengths"]) for s in info["splits"]] == [
        ("train", ["2"]), ("validation", ["1"]), ("test", ["1"]),
    ]  # fmt: skip

    res = run_cli(settings, "datasets", "export", str(made.id))
    assert res.returncode != 0 and "give --out" in res.stderr
    res = run_cli(settings, "datasets", "export", str(made.id), "--format", "tfds",
                  "--name", "Bad-Name", "--out", str(tmp_path / "x"))  # fmt: skip
    assert res.returncode != 0 and "snake_case" in res.stderr
    assert not (tmp_path / "x").exists()
