"""The dataset edits API: made, listed, replaced and removed by the dataset's owner only
(another designer's 404s); the 422s at the field (an episode not selected, a trim outside
the episode or leaving fewer than 2 steps, an empty instruction, an exclusion without a
reason, numbers out of range); a second trim of an episode from another client a 409."""

from __future__ import annotations

import pytest

from tests.api.routes.recorded import dataset_studies

NONE = {"by": "none", "train": 1.0, "validation": 0.0, "test": 0.0, "seed": 0}


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    client = factory.client(owner)
    body = {"name": "set", "split": NONE,
            "sources": [{"study_id": s.id} for s in (pilot, main)]}  # fmt: skip
    dataset = client.post("/api/datasets", json=body).json()
    return {"owner": owner, "client": client, "dataset": dataset, "cp": recorded["cartpole"]}


def _url(world, suffix: str = "") -> str:  # type: ignore[no-untyped-def]
    return f"/api/datasets/{world['dataset']['id']}/edits{suffix}"


def test_make_list_replace_and_remove(world) -> None:  # type: ignore[no-untyped-def]
    c, cp = world["client"], world["cp"]
    ep = cp[0].episode_id
    res = c.post(_url(world), json={"kind": "trim", "episode_id": ep, "trim_start": 1,
                                    "trim_end": 2})  # fmt: skip
    assert res.status_code == 201, res.text
    trim = res.json()
    assert (trim["kind"], trim["episode_id"], trim["trim_start"], trim["trim_end"]) == (
        "trim", ep, 1, 2)  # fmt: skip
    assert trim["author_email"] == world["owner"].email and trim["created_at"]
    res = c.post(_url(world), json={"kind": "relabel", "task_key": "red",
                                    "instruction": "  Push right, slowly. "})  # fmt: skip
    assert res.status_code == 201, res.text
    assert res.json()["instruction"] == "Push right, slowly."
    assert [e["kind"] for e in c.get(_url(world)).json()] == ["trim", "relabel"]
    preview = c.get(f"/api/datasets/{world['dataset']['id']}/preview").json()
    assert preview["assignments"][0]["steps"] == cp[0].num_steps - 3

    res = c.put(_url(world, f"/{trim['id']}"), json={"trim_start": 3})
    assert res.status_code == 200, res.text
    assert (res.json()["trim_start"], res.json()["trim_end"]) == (3, 0)
    assert c.delete(_url(world, f"/{trim['id']}")).status_code == 204
    assert [e["kind"] for e in c.get(_url(world)).json()] == ["relabel"]
    assert c.delete(_url(world, f"/{trim['id']}")).status_code == 404


def _loc(res) -> tuple[list, str]:  # type: ignore[no-untyped-def]
    assert res.status_code == 422, res.text
    first = res.json()["detail"][0]
    return first["loc"], first["msg"]


@pytest.mark.parametrize(
    ("body", "loc", "says"),
    [
        ({"kind": "trim", "trim_start": 99}, ["body", "trim_start"], "has 9 RLDS steps (0..8)"),
        ({"kind": "trim", "trim_start": 3, "trim_end": 5}, ["body", "trim_end"],
         "has 9 RLDS steps: dropping 3 first and 5 last leaves 1; keep at least 2"),
        ({"kind": "trim"}, ["body", "trim_start"], "at least one step"),
        ({"kind": "trim", "trim_start": -1}, ["body", "trim_start"], ""),
        ({"kind": "trim", "trim_start": 1.5}, ["body", "trim_start"], ""),
        ({"kind": "trim", "trim_end": 2**40}, ["body", "trim_end"], ""),
        ({"kind": "trim", "trim_start": 1, "reason": "x"}, ["body", "reason"], "a trim takes"),
        ({"kind": "trim", "trim_start": 1, "episode_id": "f" * 32}, ["body", "episode_id"],
         "is not one this dataset selects"),
        ({"kind": "relabel", "instruction": "  "}, ["body", "instruction"], "empty"),
        ({"kind": "relabel", "task_key": "green", "episode_id": None, "instruction": "Go."},
         ["body", "task_key"], "(its tasks: blue, red)"),
        ({"kind": "relabel", "task_key": "red", "instruction": "Go."}, ["body", "episode_id"],
         "an episode or a task_key"),
        ({"kind": "exclude"}, ["body", "reason"], "say why"),
        ({"kind": "exclude", "reason": "x", "task_key": "red"}, ["body", "task_key"], ""),
        ({"kind": "rename"}, ["body", "kind"], ""),
    ],
)  # fmt: skip
def test_bad_edits_are_refused_at_the_field(world, body, loc, says) -> None:  # type: ignore[no-untyped-def]
    full = {"episode_id": world["cp"][0].episode_id, **body}  # recording 0: 9 RLDS steps
    assert world["cp"][0].num_steps == 9
    got_loc, msg = _loc(world["client"].post(_url(world), json=full))
    assert got_loc == loc and says in msg


def test_an_infinite_number_is_refused_at_its_field(world) -> None:  # type: ignore[no-untyped-def]
    raw = (f'{{"kind": "trim", "episode_id": "{world["cp"][0].episode_id}", '
           '"trim_start": 1e400}')  # fmt: skip
    res = world["client"].post(_url(world), content=raw,
                               headers={"content-type": "application/json"})  # fmt: skip
    assert _loc(res)[0] == ["body", "trim_start"]


def test_an_excluded_in_review_episode_is_not_the_datasets(world) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].post(_url(world), json={
        "kind": "exclude", "episode_id": world["cp"][1].episode_id, "reason": "x"})  # fmt: skip
    assert _loc(res)[0] == ["body", "episode_id"]


def test_a_second_trim_from_another_client_is_a_409_naming_the_first(world, factory) -> None:  # type: ignore[no-untyped-def]
    first, second = world["client"], factory.client(world["owner"])  # two sessions
    body = {"kind": "trim", "episode_id": world["cp"][0].episode_id, "trim_start": 1}
    assert first.post(_url(world), json=body).status_code == 201
    res = second.post(_url(world), json={**body, "trim_start": 2})
    assert res.status_code == 409, res.text
    said = res.json()
    text = said.get("message") or str(said.get("detail"))
    assert f"already has a trim by {world['owner'].email} at " in text and "reload" in text
    assert [e["trim_start"] for e in second.get(_url(world)).json()] == [1]  # not overwritten


def test_a_second_exclusion_is_a_409_and_an_excluded_episode_may_be_trimmed(world) -> None:  # type: ignore[no-untyped-def]
    c, ep = world["client"], world["cp"][0].episode_id
    body = {"kind": "exclude", "episode_id": ep, "reason": "shaky"}
    assert c.post(_url(world), json=body).status_code == 201
    res = c.post(_url(world), json={**body, "reason": "blurry"})
    assert res.status_code == 409 and "already has a exclude" not in res.text, res.text
    assert f"Episode {ep} already has an exclusion by" in res.json()["message"]
    res = c.post(_url(world), json={"kind": "trim", "episode_id": ep, "trim_start": 1})
    assert res.status_code == 201, res.text


def test_another_designer_gets_404s(world, factory) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    made = c.post(_url(world), json={"kind": "exclude", "reason": "shaky",
                                     "episode_id": world["cp"][0].episode_id}).json()  # fmt: skip
    other = factory.client(factory.user())
    assert other.get(_url(world)).status_code == 404
    assert other.post(_url(world), json={"kind": "exclude", "reason": "x",
                      "episode_id": world["cp"][0].episode_id}).status_code == 404  # fmt: skip
    assert other.put(_url(world, f"/{made['id']}"), json={"reason": "y"}).status_code == 404
    assert other.delete(_url(world, f"/{made['id']}")).status_code == 404
    assert c.get(_url(world)).json()[0]["reason"] == "shaky"
