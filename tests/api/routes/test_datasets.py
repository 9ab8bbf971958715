"""The datasets API: create, read, list, change and delete one's own; 422s naming the field;
another designer's dataset a 404 and their study refused; the preview of real recordings."""

from __future__ import annotations

import pytest

from tests.api.routes.recorded import Inserter, dataset_studies, two_env_spec

SPLIT = {"by": "participant", "train": 0.5, "validation": 0.25, "test": 0.25, "seed": 9}


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    return {"owner": owner, "pilot": pilot, "main": main, "client": factory.client(owner)}


def _body(*studies, **extra):  # type: ignore[no-untyped-def]
    return {"name": "Pushes", "sources": [{"study_id": s.id} for s in studies], "split": SPLIT,
            **extra}  # fmt: skip


def _locs(res) -> list[list]:  # type: ignore[no-untyped-def]
    assert res.status_code == 422, res.text
    return [d["loc"] for d in res.json()["detail"]]


def test_create_read_list_change_and_delete(world) -> None:  # type: ignore[no-untyped-def]
    c, pilot, main = world["client"], world["pilot"], world["main"]
    assert c.get("/api/datasets").json() == []
    res = c.post("/api/datasets", json=_body(pilot, main, description="Both studies."))
    assert res.status_code == 201, res.text
    made = res.json()
    assert made["name"] == "Pushes" and made["owner_id"] == world["owner"].id
    assert made["split"] == SPLIT
    # each source's filter is the episodes page's, completed and not excluded by default
    assert made["sources"][0]["filter"]["statuses"] == ["completed"]
    assert made["sources"][0]["filter"]["excluded"] is False
    assert c.get(f"/api/datasets/{made['id']}").json() == made
    assert [d["id"] for d in c.get("/api/datasets").json()] == [made["id"]]

    res = c.patch(f"/api/datasets/{made['id']}", json={"name": "Pilot only",
                  "sources": [{"study_id": pilot.id, "filter": {"tags": ["good"]}}]})  # fmt: skip
    assert res.status_code == 200, res.text
    changed = res.json()
    assert changed["name"] == "Pilot only" and changed["description"] == "Both studies."
    assert changed["sources"][0]["filter"]["tags"] == ["good"] and changed["split"] == SPLIT

    assert c.delete(f"/api/datasets/{made['id']}").status_code == 204
    assert c.get(f"/api/datasets/{made['id']}").status_code == 404
    # the studies and their episodes stay
    assert len(c.get(f"/api/studies/{pilot.id}/episodes").json()["items"]) == 3


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"name": "  "}, ["body", "name"]),
        ({"sources": []}, ["body", "sources"]),
        ({"split": {**SPLIT, "train": 0.9}}, ["body", "split", "train"]),  # adds up to 1.4
        ({"split": {**SPLIT, "test": -0.25, "train": 1.0}}, ["body", "split", "test"]),
        ({"split": {**SPLIT, "by": "session"}}, ["body", "split", "by"]),
        ({"split": {**SPLIT, "seed": -1}}, ["body", "split", "seed"]),
        ({"split": {**SPLIT, "seed": "1"}}, ["body", "split", "seed"]),
        ({"sources": [{"study_id": 0}]}, ["body", "sources", 0, "study_id"]),
        ({"sources": [{"study_id": 1, "filter": {"outcomes": ["great"]}}]},
         ["body", "sources", 0, "filter", "outcomes", 0]),
        ({"sources": [{"study_id": 1, "filter": {"task": "Bad task!"}}]},
         ["body", "sources", 0, "filter", "task"]),
        ({"colour": "red"}, ["body", "colour"]),
    ],
)  # fmt: skip
def test_bad_fields_are_refused_naming_them(world, change, loc) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].post("/api/datasets", json={**_body(world["pilot"]), **change})
    assert loc in _locs(res)


def test_another_designers_study_a_study_twice_and_a_taken_name(world, factory) -> None:  # type: ignore[no-untyped-def]
    c, pilot = world["client"], world["pilot"]
    theirs = factory.study(factory.user())
    res = c.post("/api/datasets", json=_body(pilot, theirs))
    assert _locs(res) == [["body", "sources", 1, "study_id"]]
    assert f"no study {theirs.id} of yours" in res.json()["message"]
    assert _locs(c.post("/api/datasets", json=_body(pilot, pilot))) == [
        ["body", "sources", 1, "study_id"]
    ]
    made = c.post("/api/datasets", json=_body(pilot)).json()
    assert _locs(c.post("/api/datasets", json=_body(pilot))) == [["body", "name"]]
    other = c.post("/api/datasets", json=_body(pilot, name="Other")).json()
    assert _locs(c.patch(f"/api/datasets/{other['id']}", json={"name": made["name"]})) == [
        ["body", "name"]
    ]
    assert c.patch(f"/api/datasets/{made['id']}", json={"name": made["name"]}).status_code == 200


def test_another_designers_dataset_is_a_404(world, factory) -> None:  # type: ignore[no-untyped-def]
    made = world["client"].post("/api/datasets", json=_body(world["pilot"])).json()
    stranger = factory.client(factory.user())
    assert stranger.get("/api/datasets").json() == []
    for method in ("get", "delete"):
        assert getattr(stranger, method)(f"/api/datasets/{made['id']}").status_code == 404
    assert stranger.get(f"/api/datasets/{made['id']}/preview").status_code == 404
    res = stranger.patch(f"/api/datasets/{made['id']}", json={"name": "mine now"})
    assert res.status_code == 404
    assert factory.client().get("/api/datasets").status_code == 401
    assert world["client"].get(f"/api/datasets/{made['id']}").json()["name"] == "Pushes"


def test_the_preview_counts_the_split(world) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    made = c.post("/api/datasets", json=_body(world["pilot"], world["main"])).json()
    res = c.get(f"/api/datasets/{made['id']}/preview")
    assert res.status_code == 200, res.text
    out = res.json()
    assert (out["episodes"], out["participants"], out["split_by"], out["seed"]) == (
        4, 3, "participant", 9,
    )  # fmt: skip
    assert [s["split"] for s in out["splits"]] == ["train", "validation", "test"]
    assert [s["fraction"] for s in out["splits"]] == [0.5, 0.25, 0.25]
    assert sum(s["episodes"] for s in out["splits"]) == 4
    assert {r["label"] for r in out["studies"]} == {"Pilot", "Main"}
    per_split = [sum(r["split"] == s["split"] for r in out["assignments"]) for s in out["splits"]]
    assert per_split == [s["episodes"] for s in out["splits"]]
    per_person = {r["participant"]: r["split"] for r in out["by_participant"]}
    assert len(per_person) == 3 and "worker-1" not in per_person  # pseudonymous
    assert c.get(f"/api/datasets/{made['id']}/preview").json() == out  # seeded


def test_the_preview_refuses_environments_with_different_spaces(
    world, factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    c, pilot = world["client"], world["pilot"]
    cars = factory.study(world["owner"], two_env_spec("Cars"))
    Inserter(db, settings.data_root).add(cars, recorded["mountaincar"][0], env_key="mountaincar")
    made = c.post("/api/datasets", json=_body(pilot, cars)).json()
    res = c.get(f"/api/datasets/{made['id']}/preview")
    assert res.status_code == 422
    body = res.json()
    assert body["code"] == "incompatible_environments"
    assert body["detail"][0]["environments"] == [f"study {pilot.id}/cartpole",
                                                 f"study {cars.id}/mountaincar"]  # fmt: skip
    assert "different observation or action spaces" in body["message"]


def test_the_preview_of_an_empty_selection_says_so(world) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    body = _body(world["pilot"])
    body["sources"][0]["filter"] = {"tags": ["nothing has this"]}
    made = c.post("/api/datasets", json=body).json()
    out = c.get(f"/api/datasets/{made['id']}/preview").json()
    assert out["episodes"] == 0 and "No episode matches" in out["message"]
