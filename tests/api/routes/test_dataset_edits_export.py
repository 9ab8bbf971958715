"""A dataset's edits in its export, as a researcher loads it: one episode trimmed, one task
relabelled and one episode excluded; the RLDS export read by TFDS+rlds holds the trimmed
episode's recorded steps start..end value for value (its first kept step first, its last
kept step last and not terminal, ``ended_by`` trim), the new instruction on the task's
episode, and not the excluded one; envlogger and episode videos refuse a trim."""

from __future__ import annotations

import pytest

from server.core.security import salted_hash
from server.export import TaggedSpan
from server.export.runner import export_dir
from tests.api.routes.recorded import dataset_studies
from tests.api.routes.test_exports import wait_done
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected

NONE = {"by": "none", "train": 1.0, "validation": 0.0, "test": 0.0, "seed": 0}
NEW = "Push the cart right, then hold it."


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """The datasets' two studies (recordings 0, 2 in Pilot with tasks red and blue; 3, 4 in
    Main), their dataset in train, and its edits: recording 2 trimmed by 1 first and 2 last,
    task red relabelled, recording 4 excluded."""
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    c = factory.client(owner)
    body = {"name": "edited", "split": NONE,
            "sources": [{"study_id": s.id} for s in (pilot, main)]}  # fmt: skip
    dataset = c.post("/api/datasets", json=body).json()
    cp = recorded["cartpole"]
    url = f"/api/datasets/{dataset['id']}/edits"
    for edit in (
        {"kind": "trim", "episode_id": cp[2].episode_id, "trim_start": 1, "trim_end": 2},
        {"kind": "relabel", "task_key": "red", "instruction": NEW},
        {"kind": "exclude", "episode_id": cp[4].episode_id, "reason": "played twice"},
    ):
        assert c.post(url, json=edit).status_code == 201
    return {"client": c, "dataset": dataset, "cp": cp}


def _trimmed(rec, start: int, end: int, **fields) -> dict:  # type: ignore[no-untyped-def]
    """The expected episode of ``rec`` without its first ``start`` and last ``end`` steps:
    the recorded steps start..n-1-end, the last one's action and reward zeros (every RLDS
    last step's, as an end tag's cut), re-flagged first and last, not terminal."""
    last = rec.num_steps - 1 - end
    whole = expected_episode(rec, step_tags=(TaggedSpan("cut", last, last),),
                             end_tags=("cut",), **fields)  # fmt: skip
    out = {k: (v[start:] if k.startswith("steps/") else v) for k, v in whole.items()}
    out["steps/is_first"] = out["steps/is_first"].copy()
    out["steps/is_first"][0] = True
    assert out["steps/is_last"][-1] and not out["steps/is_terminal"].any()
    out.update(ended_by="trim", env_outcome="", _length=last + 1 - start,
               _return=float(sum(out["steps/reward"])))  # fmt: skip
    return out


@pytest.mark.database_plays_no_part
def test_the_export_holds_the_trimmed_steps_and_the_new_instruction(  # type: ignore[no-untyped-def]
    world, settings, tmp_path
) -> None:
    c, dataset, cp = world["client"], world["dataset"], world["cp"]
    options = {"format": "tfds", "archive": "folder", "name": "edited"}
    res = c.post(f"/api/datasets/{dataset['id']}/exports", json={"options": options})
    assert res.status_code == 202, res.text
    job = res.json()
    assert job["episodes_total"] == 3  # recording 4 excluded
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done["message"]
    assert done["steps_total"] == sum(cp[i].num_steps for i in (0, 2, 3)) - 3

    agent = {w: salted_hash(settings.secret_key, w) for w in ("worker-1", "worker-2", "worker-3")}
    expected = [
        expected_episode(cp[0], agent_id=agent["worker-1"], task_id="red", instruction=NEW),
        # the fixture's rows keep no instruction shown, and its study gives none
        _trimmed(cp[2], 1, 2, agent_id=agent["worker-2"], task_id="blue"),
        expected_episode(cp[3], agent_id=agent["worker-3"]),
    ]
    save_expected(tmp_path / "train.npz", expected)
    data_dir = export_dir(settings.data_root, job["id"]) / "edited" / "edited" / "1.0.0"
    report = check_report("rlds", "rlds", "values", str(data_dir), str(tmp_path / "train.npz"),
                          "train")  # fmt: skip
    assert report["episodes"] == 3
    assert report["steps"] == sum(cp[i].num_steps for i in (0, 2, 3)) - 3


@pytest.mark.parametrize(
    ("options", "loc"),
    [({"format": "envlogger"}, ["body", "options", "format"]),
     ({"format": "tfds", "videos": True}, ["body", "options", "videos"])],
)  # fmt: skip
def test_a_format_that_cannot_trim_is_refused_at_its_field(world, options, loc) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].post(f"/api/datasets/{world['dataset']['id']}/exports",
                               json={"options": options})  # fmt: skip
    assert res.status_code == 422, res.text
    assert res.json()["detail"][0]["loc"] == loc
    assert "trim of episode" in res.json()["detail"][0]["msg"]
