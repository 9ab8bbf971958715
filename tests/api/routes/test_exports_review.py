"""Exports and review labels: excluded episodes left out by default, outcomes exported, and
one dataset per environment when the environments' spaces differ."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

from tests.api.routes.test_exports import start, wait_done
from tests.api.routes.test_exports import world as world  # the fixture


def _patch(c, episode_id: str, **body) -> None:  # type: ignore[no-untyped-def]
    res = c.patch(f"/api/episodes/{episode_id}", json=body)
    assert res.status_code == 200, res.text


def _tags_docs(content: bytes, name: str) -> dict[str, dict]:
    with tarfile.open(fileobj=io.BytesIO(content), mode="r:gz") as tf:
        docs = {}
        for member in tf.getmembers():
            if member.name.endswith("/tags.json"):
                file = tf.extractfile(member)
                assert file is not None
                doc = json.loads(file.read())
                docs[doc["episode_id"]] = doc
    return docs


def test_excluded_left_out_by_default_and_outcomes_exported(world, db) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = world["client"], world["study"].id, world["episodes"]
    eps[0].player_outcome = "success"
    db.commit()
    _patch(c, eps[0].id, outcome="failure")  # the reviewer overrides the player
    _patch(c, eps[1].id, excluded=True)
    job = start(c, sid, {"environments": ["cartpole"]}, format="envlogger", archive="tar.gz")
    assert job["episodes_total"] == 2  # 3 completed cartpole episodes, one excluded
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    docs = _tags_docs(c.get(done["download_url"]).content, "raw")
    assert set(docs) == {eps[0].id, eps[2].id}
    first = docs[eps[0].id]
    assert (first["outcome"], first["player_outcome"], first["reviewer_outcome"]) == (
        "failure", "success", "failure",
    )  # fmt: skip
    assert (docs[eps[2].id]["outcome"], docs[eps[2].id]["player_outcome"]) == ("", "")
    # asked for, excluded episodes are exported too
    selection = {"environments": ["cartpole"], "include_excluded": True}
    job = start(c, sid, selection, format="envlogger", archive="tar.gz")
    assert job["episodes_total"] == 3
    # checked rows: an excluded one is left out as well; only excluded ones is a 422
    job = start(c, sid, {"episode_ids": [eps[0].id, eps[1].id]}, format="envlogger")
    assert job["episodes_total"] == 1
    res = c.post(f"/api/studies/{sid}/exports", json={"selection": {"episode_ids": [eps[1].id]}})
    assert res.status_code == 422 and "excluded" in res.json()["message"]
    # and by outcome
    job = start(c, sid, {"outcomes": ["failure"]}, format="envlogger")
    assert job["episodes_total"] == 1


def test_mixed_spaces_answer_a_code_then_split_by_environment(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    res = c.post(f"/api/studies/{sid}/exports", json={"selection": {}, "options": {}})
    assert res.status_code == 422
    body = res.json()
    assert body["code"] == "incompatible_environments"
    assert body["detail"][0]["environments"] == ["cartpole", "mountaincar"]
    # the message is said once (the detail names the problem, not the whole message again)
    assert body["detail"][0]["msg"] not in body["message"]
    job = start(c, sid, {"statuses": ["completed"]}, name="both", split_by_env=True, archive="zip")
    assert job["episodes_total"] == 4 and job["options"]["split_by_env"] is True
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    assert (done["episodes_done"], done["progress"]) == (4, 1.0)
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        names = set(zf.namelist())
        infos = {
            env: json.loads(zf.read(f"both/both_{env}/both_{env}/1.0.0/dataset_info.json"))
            for env in ("cartpole", "mountaincar")
        }
    assert {"both/both_cartpole/README.md", "both/both_mountaincar/README.md"} <= names
    assert infos["cartpole"]["name"] == "both_cartpole"
    assert infos["mountaincar"]["splits"][0]["shardLengths"] == ["1"]
    # Minari as well: one dataset per environment
    job = start(
        c, sid, {"statuses": ["completed"]}, name="mini", split_by_env=True, format="minari"
    )
    assert wait_done(c, job["id"])["state"] == "succeeded"


def test_the_preview_says_what_a_format_does_with_mixed_spaces_before_any_export(world) -> None:  # type: ignore[no-untyped-def]
    """The dialog asks first: one dataset per environment is offered, envlogger splits by
    itself, one environment is no question; nothing fails and no job is made."""
    c, sid = world["client"], world["study"].id
    url = f"/api/studies/{sid}/exports/preview"

    def spaces(selection: dict, **options) -> dict:  # type: ignore[type-arg]
        res = c.post(url, json={"selection": selection, "options": options})
        assert res.status_code == 200, res.text
        return res.json()["spaces"]

    both = spaces({}, format="tfds")
    assert (both["mixed"], both["split"]) == (True, "offer")
    assert both["environments"] == ["cartpole", "mountaincar"]
    assert "one dataset per environment" in both["message"]
    assert spaces({}, format="envlogger")["split"] == "automatic"
    one = spaces({"environments": ["cartpole"]}, format="minari")
    assert (one["mixed"], one["split"], one["message"]) == (False, "none", "")
    # without options the preview does not look at the logs
    plain = c.post(url, json={"selection": {}})
    assert plain.status_code == 200 and plain.json()["spaces"] is None
    assert c.get(f"/api/studies/{sid}/exports").json() == []
