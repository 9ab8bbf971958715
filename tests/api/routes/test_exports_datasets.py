"""Exports of a dataset end to end on real recordings: a job over two studies whose episodes
go to the splits the preview assigns (loaded back by TFDS, value by value), listed and
downloaded; the request's 422s naming the field; another designer's 404s; a queued job kept
as it was queued; the dataset's deletion taking its exports along."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from server.core.security import salted_hash
from server.export.runner import export_dir
from tests.api.routes.recorded import CARTPOLE_SPEC, Inserter, two_env_spec
from tests.api.routes.test_exports import wait_done
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected

SPLIT = {"by": "participant", "train": 0.5, "validation": 0.25, "test": 0.25, "seed": 0}
INSTRUCTIONS = {"Pilot": "Pilot: push right.", "Main": "Main: keep it up."}
# (study, participant) of cartpole recordings 0..4: worker-1 plays in both studies
PLAYS = [("Pilot", "worker-1"), ("Pilot", "worker-2"), ("Main", "worker-3"),
         ("Main", "worker-1"), ("Main", "worker-4")]  # fmt: skip


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """Two CartPole studies of one designer (each with its own instructions) and a dataset
    of both, split by participant."""
    owner = factory.user()
    studies = {
        name: factory.study(owner, {"name": name, "environments": [
            {**CARTPOLE_SPEC, "instructions": text}]})
        for name, text in INSTRUCTIONS.items()
    }  # fmt: skip
    ins = Inserter(db, settings.data_root)
    for i, (name, who) in enumerate(PLAYS):
        ins.add(studies[name], recorded["cartpole"][i], participant=who, minutes_ago=50 - 10 * i)
    client = factory.client(owner)
    body = {"name": "Both", "split": SPLIT,
            "sources": [{"study_id": s.id} for s in studies.values()]}  # fmt: skip
    dataset = client.post("/api/datasets", json=body).json()
    return {"owner": owner, "studies": studies, "client": client, "dataset": dataset}


def start(client, dataset_id: int, **options) -> dict:  # type: ignore[no-untyped-def]
    res = client.post(f"/api/datasets/{dataset_id}/exports", json={"options": options})
    assert res.status_code == 202, res.text
    return res.json()


def _by_split(assignments: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in assignments:
        out.setdefault(a["split"], []).append(a["episode_id"])
    return {s: out[s] for s in ("train", "validation", "test") if s in out}


@pytest.mark.database_plays_no_part
def test_each_split_holds_the_previews_episodes_value_by_value(  # type: ignore[no-untyped-def]
    world, settings, recorded, tmp_path
) -> None:
    c, dataset = world["client"], world["dataset"]
    preview = c.get(f"/api/datasets/{dataset['id']}/preview").json()
    want = _by_split(preview["assignments"])
    assert list(want) == ["train", "validation", "test"]  # every split has episodes
    job = start(c, dataset["id"], format="tfds", archive="folder", name="both")
    assert (job["dataset_id"], job["study_id"], job["episodes_total"]) == (dataset["id"], None, 5)
    assert job["selection"]["splits"] == {s: len(ids) for s, ids in want.items()}
    assert "episodes" not in job["selection"]
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done["message"]
    assert done["episodes_done"] == 5 and done["progress"] == 1.0
    listed = c.get(f"/api/datasets/{dataset['id']}/exports").json()
    assert [j["id"] for j in listed] == [job["id"]]
    res = c.get(done["download_url"])
    assert res.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(res.content)).namelist()
    assert "both/both/1.0.0/both-validation.tfrecord-00000-of-00001" in names

    out = export_dir(settings.data_root, job["id"]) / "both"
    data_dir = out / "both" / "1.0.0"
    report = check_report("rlds", "splits", "tfds", str(data_dir))
    assert {s: v["episodes"] for s, v in report["splits"].items()} == want
    study_of = {recorded["cartpole"][i].episode_id: play for i, play in enumerate(PLAYS)}
    recs = {r.episode_id: r for r in recorded["cartpole"]}
    for split, ids in want.items():
        expected = [
            expected_episode(
                recs[i],
                agent_id=salted_hash(settings.secret_key, study_of[i][1]),
                instruction=INSTRUCTIONS[study_of[i][0]],  # its own study's
            )
            for i in ids
        ]
        save_expected(tmp_path / f"{split}.npz", expected)
        report = check_report(
            "rlds", "rlds", "values", str(data_dir), str(tmp_path / f"{split}.npz"), split
        )
        assert report["episodes"] == len(ids)
    card = (out / "README.md").read_text()
    assert f"dataset Both (dataset {dataset['id']}" in card
    assert 'test = builder.as_dataset(split="test")' in card


def test_a_queued_job_keeps_its_episodes_and_splits(world, settings) -> None:  # type: ignore[no-untyped-def]
    c, dataset = world["client"], world["dataset"]
    before = c.get(f"/api/datasets/{dataset['id']}/preview").json()["assignments"]
    job = start(c, dataset["id"], format="lerobot", archive="folder", name="both")
    pilot = world["studies"]["Pilot"]
    change = {"split": {**SPLIT, "by": "none"}, "sources": [{"study_id": pilot.id}]}
    assert c.patch(f"/api/datasets/{dataset['id']}", json=change).status_code == 200
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done["message"]
    folder = export_dir(settings.data_root, job["id"])
    info = json.loads((folder / "both" / "both" / "meta" / "info.json").read_text())
    counts = _by_split(before)  # the split as queued, not the one-study "none" of now
    a, b = len(counts["train"]), len(counts["train"]) + len(counts["validation"])
    assert info["splits"] == {"train": f"0:{a}", "validation": f"{a}:{b}", "test": f"{b}:5"}

    # deleting the dataset takes its exports along (rows and outputs)
    assert c.delete(f"/api/datasets/{dataset['id']}").status_code == 204
    assert c.get(f"/api/exports/{job['id']}").status_code == 404
    assert not folder.exists()


def _locs(res) -> list[list]:  # type: ignore[no-untyped-def]
    assert res.status_code == 422, res.text
    return [d["loc"] for d in res.json()["detail"]]


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"options": {"format": "csv"}}, ["body", "options", "format"]),
        ({"options": {"split_by_env": True}}, ["body", "options", "split_by_env"]),
        ({"options": {"engine": "beam"}}, ["body", "options", "engine"]),
        ({"options": {"name": "Not-Snake"}}, ["body", "options", "name"]),
        ({"options": {"profile": "oxe", "format": "lerobot"}}, ["body", "options", "profile"]),
        ({"colour": "red"}, ["body", "colour"]),
    ],
)
def test_bad_requests_are_refused_naming_the_field(world, body, loc) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].post(f"/api/datasets/{world['dataset']['id']}/exports", json=body)
    assert loc in _locs(res)


def test_an_empty_or_incompatible_dataset_is_refused(  # type: ignore[no-untyped-def]
    world, factory, db, settings, recorded
) -> None:
    c, pilot = world["client"], world["studies"]["Pilot"]
    empty = c.post("/api/datasets", json={"name": "None", "split": SPLIT, "sources": [
        {"study_id": pilot.id, "filter": {"tags": ["nothing-has-this"]}}]}).json()  # fmt: skip
    res = c.post(f"/api/datasets/{empty['id']}/exports", json={})
    assert _locs(res) == [["path", "dataset_id"]]
    mixed = factory.study(world["owner"], two_env_spec())
    Inserter(db, settings.data_root).add(
        mixed, recorded["mountaincar"][0], env_key="mountaincar", participant="worker-9"
    )
    both = c.post("/api/datasets", json={"name": "Mixed", "split": SPLIT, "sources": [
        {"study_id": pilot.id}, {"study_id": mixed.id}]}).json()  # fmt: skip
    res = c.post(f"/api/datasets/{both['id']}/exports", json={})
    assert res.status_code == 422 and res.json()["code"] == "incompatible_environments"
    assert c.get(f"/api/datasets/{both['id']}/exports").json() == []


def test_another_designer_sees_none_of_it(world, factory, client) -> None:  # type: ignore[no-untyped-def]
    c, dataset = world["client"], world["dataset"]
    job = start(c, dataset["id"], format="envlogger", archive="zip")
    stranger = factory.client(factory.user())
    path = f"/api/datasets/{dataset['id']}/exports"
    assert stranger.post(path, json={}).status_code == 404
    assert stranger.get(path).status_code == 404
    for url in (f"/api/exports/{job['id']}", f"/api/exports/{job['id']}/download"):
        assert stranger.get(url).status_code == 404
    assert stranger.post(f"/api/exports/{job['id']}/cancel").status_code == 404
    assert client.post(path, json={}).status_code == 401
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done["message"]
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        folders = {Path(n).parts[1] for n in zf.namelist() if len(Path(n).parts) > 2}
    assert folders <= {"train", "validation", "test"} and "train" in folders
