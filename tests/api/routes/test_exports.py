"""Export jobs end to end on really recorded episodes: background process, progress,
download, cancel, failures that leave nothing behind, and the bad inputs."""

from __future__ import annotations

import io
import json
import os
import tarfile
import threading
import time
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest

from server.core.security import salted_hash
from server.export import TaggedSpan
from server.export.runner import EXPORTS_DIR, export_dir
from server.models import ExportJob, JobState, Role
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.export.consumers import check_report
from tests.export.expected import (
    EXPORTED_VERDICTS,
    VERDICT_ROWS,
    expected_episode,
    save_expected,
)

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

FINISHED = {"succeeded", "failed", "canceled"}


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A study with three completed CartPole episodes, an abandoned one and a MountainCar one."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [
        ins.add(study, cp[0], tags=("good",), minutes_ago=50),
        ins.add(study, cp[1], minutes_ago=40),
        ins.add(study, cp[2], tags=("good",), minutes_ago=30),
        ins.add(study, cp[3], status="abandoned", minutes_ago=20),
        ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=10),
    ]
    return {"owner": owner, "study": study, "episodes": eps, "client": factory.client(owner)}


def wait_done(client, job_id: int, deadline_s: float = 120.0) -> dict:  # type: ignore[no-untyped-def]
    """Poll the job until it finishes (the deadline only stops a hung test)."""
    end = time.monotonic() + deadline_s
    while True:
        body = client.get(f"/api/exports/{job_id}").json()
        if body["state"] in FINISHED or time.monotonic() > end:
            return body
        time.sleep(0.1)


def start(client, study_id: int, selection: dict | None = None, **options) -> dict:  # type: ignore[no-untyped-def]
    res = client.post(
        f"/api/studies/{study_id}/exports",
        json={"selection": selection or {"environments": ["cartpole"]}, "options": options},
    )
    assert res.status_code == 202, res.text
    return res.json()


def _leftovers(data_root: Path) -> list[str]:
    root = data_root / EXPORTS_DIR
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_authorization(world, factory, client) -> None:  # type: ignore[no-untyped-def]
    sid = world["study"].id
    body = {"selection": {"environments": ["cartpole"]}}
    assert client.post(f"/api/studies/{sid}/exports", json=body).status_code == 401
    other = factory.client(factory.user())
    assert other.post(f"/api/studies/{sid}/exports", json=body).status_code == 404
    job = start(world["client"], sid, archive="folder")
    for url in (f"/api/exports/{job['id']}", f"/api/exports/{job['id']}/download"):
        assert client.get(url).status_code == 401
        assert other.get(url).status_code == 404
    admin = factory.client(factory.user(Role.admin))
    assert wait_done(admin, job["id"])["state"] == "succeeded"
    assert admin.get(f"/api/studies/{sid}/exports").json()[0]["id"] == job["id"]
    assert other.get(f"/api/studies/{sid}/exports").status_code == 404


def test_zip_export_end_to_end(world, settings, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    cp = recorded["cartpole"]
    job = start(c, sid, name="demo", archive="zip")
    assert job["state"] in {"queued", "running"} and job["episodes_total"] == 3
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    steps = sum(r.num_steps for r in cp[:3])
    assert done["steps_total"] == steps
    assert (done["episodes_done"], done["episodes_total"], done["steps_done"]) == (3, 3, steps)
    assert done["progress"] == 1.0 and done["download_url"] == f"/api/exports/{job['id']}/download"
    res = c.get(done["download_url"])
    assert res.status_code == 200 and res.headers["content-type"] == "application/zip"
    assert 'filename="demo.zip"' in res.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(res.content)) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path / "unzipped")
    assert "demo/README.md" in names
    data_dir = tmp_path / "unzipped" / "demo" / "demo" / "1.0.0"
    files = sorted(p.name for p in data_dir.iterdir())
    assert "dataset_info.json" in files and "features.json" in files
    assert any(".tfrecord-" in f for f in files)
    info = json.loads((data_dir / "dataset_info.json").read_text())
    assert info["name"] == "demo"
    assert _leftovers(settings.data_root) == [str(job["id"])]
    assert [p.name for p in export_dir(settings.data_root, job["id"]).iterdir()] == ["demo.zip"]


def test_tar_gz_with_explicit_ids_and_envlogger_format(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    ids = [world["episodes"][3].id, world["episodes"][0].id]  # abandoned ones may be chosen
    job = start(c, sid, {"episode_ids": ids}, format="envlogger", archive="tar.gz", name="raw")
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    res = c.get(done["download_url"])
    assert res.headers["content-type"] == "application/gzip"
    assert 'filename="raw.tar.gz"' in res.headers["content-disposition"]
    with tarfile.open(fileobj=io.BytesIO(res.content), mode="r:gz") as tf:
        names = tf.getnames()
    for episode_id in ids:
        assert f"raw/episodes/{episode_id}/tags.json" in names


def test_an_envlogger_export_of_mixed_spaces_writes_one_folder_per_environment(world) -> None:  # type: ignore[no-untyped-def]
    """It only copies logs: environments with different spaces are not refused (as the
    dataset formats must) but split, each folder a single-environment envlogger export."""
    c, sid = world["client"], world["study"].id
    job = start(c, sid, {"statuses": ["completed"]}, format="envlogger", archive="zip", name="mix")
    assert job["options"]["split_by_env"] is True
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        names = set(zf.namelist())
    for env in ("cartpole", "mountaincar"):
        assert f"mix/mix_{env}/README.md" in names
        assert any(n.startswith(f"mix/mix_{env}/episodes/") for n in names), names
    # the dataset formats still refuse (and offer the split)
    res = c.post(f"/api/studies/{sid}/exports", json={"selection": {}, "options": {}})
    assert res.status_code == 422 and res.json()["code"] == "incompatible_environments"


def test_export_jobs_wait_while_players_fill_the_budget(world, app) -> None:  # type: ignore[no-untyped-def]
    """An export job is a process of the one budget: while players' workers fill
    STUDIO_MAX_WORKERS it stays queued (another replica with room may take it), then runs
    holding a slot, and gives it back."""
    c, sid = world["client"], world["study"].id
    budget = app.state.budget
    busy = {"players": budget.max_workers}
    polls = []  # the export poller asked the budget for room

    def players() -> int:
        if threading.current_thread().name.startswith("export-poller"):
            polls.append(1)
        return busy["players"]

    budget._players = players
    job = start(c, sid, format="envlogger", archive="folder")
    polls.clear()
    app.state.export_jobs.submit()
    deadline = time.monotonic() + 30
    while len(polls) < 2 and time.monotonic() < deadline:  # a poll or two, refused
        time.sleep(0.02)
    assert len(polls) >= 2
    assert c.get(f"/api/exports/{job['id']}").json()["state"] == "queued"
    busy["players"] = 0
    app.state.export_jobs.submit()
    assert wait_done(c, job["id"])["state"] == "succeeded"
    assert budget.peak >= 1
    deadline = time.monotonic() + 10
    while budget.in_use and time.monotonic() < deadline:
        time.sleep(0.05)  # the job's thread gives its slot back as it ends
    assert budget.in_use == 0


def test_minari_format_job(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    job = start(c, sid, format="minari", archive="zip", name="mini")
    assert job["format"] == "minari"
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        names = zf.namelist()
        meta = json.loads(zf.read("mini/mini-v1/data/metadata.json"))
        card = zf.read("mini/README.md").decode()
    assert meta["total_episodes"] == 3 and meta["data_format"] == "arrow"
    assert {f"mini/mini-v1/data/{i}/part-0.arrow" for i in range(3)} <= set(names)
    assert 'minari.load_dataset("mini-v1")' in card


def test_oxe_profile_job(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    res = c.post(
        f"/api/studies/{sid}/exports",
        json={"selection": {}, "options": {"format": "envlogger", "profile": "oxe"}},
    )
    assert res.status_code == 422 and "tfds format only" in res.text
    job = start(c, sid, profile="oxe", archive="zip", name="ox")
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        stats = json.loads(zf.read("ox/ox/1.0.0/dataset_statistics.json"))
        features = zf.read("ox/ox/1.0.0/features.json").decode()
    assert stats["num_trajectories"] == 3 and set(stats["observation"]) == {"state"}
    assert "language_instruction" in features and "episode_metadata" in features


def test_folder_export_streams_a_zip(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    job = start(c, sid, {"tags": ["good"]}, archive="folder", name="good_ones")
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded" and done["episodes_total"] == 2
    res = c.get(done["download_url"])
    assert 'filename="good_ones.zip"' in res.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(res.content)) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
    assert "good_ones/good_ones/1.0.0/dataset_info.json" in names


@pytest.mark.database_plays_no_part
@pytest.mark.consumer
def test_job_export_loads_in_tfds(world, db, settings, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    ep = world["episodes"][0]
    # its replay diverged (set on the row as the checker stores it): the export says where,
    # in RLDS steps (the log's timestep 3 holds the reward of step 2's action)
    for key, value in VERDICT_ROWS["diverged"].items():
        setattr(ep, key, value)
    db.commit()
    c.post(f"/api/episodes/{ep.id}/step-tags", json={"name": "wobble", "start": 1, "end": 2})
    c.post(f"/api/episodes/{ep.id}/notes", json={"body": "looks fine"})
    job = start(c, sid, {"episode_ids": [ep.id]}, name="ds", archive="zip")
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        zf.extractall(tmp_path / "x")
    rec = recorded["cartpole"][0]
    want = expected_episode(
        rec,
        agent_id=salted_hash(settings.secret_key, "worker-1"),
        tags=("good",),
        notes="looks fine",
        step_tags=(TaggedSpan("wobble", 1, 2),),
        tag_names=("wobble",),
        replay=EXPORTED_VERDICTS["diverged"],
    )
    save_expected(tmp_path / "expected.npz", [want])
    data_dir = tmp_path / "x" / "ds" / "ds" / "1.0.0"
    expected = str(tmp_path / "expected.npz")
    report = check_report("rlds", "rlds", "values", str(data_dir), expected)
    assert report == {"mode": "values", "episodes": 1, "steps": rec.num_steps}


def test_cancel_removes_output(world, settings) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    job = start(c, sid)
    res = c.post(f"/api/exports/{job['id']}/cancel")
    assert res.status_code == 200
    done = wait_done(c, job["id"])
    assert done["state"] == "canceled" and done["download_url"] is None
    assert _leftovers(settings.data_root) == []
    assert c.post(f"/api/exports/{job['id']}/cancel").status_code == 409
    assert c.get(f"/api/exports/{job['id']}/download").status_code == 400
    assert c.delete(f"/api/exports/{job['id']}").status_code == 204
    assert c.get(f"/api/exports/{job['id']}").status_code == 404


def test_failed_job_leaves_nothing(world, settings) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    # The pre-check opens one log per environment (the first); break the last one's steps.
    broken = Path(world["episodes"][2].storage_path)
    for path in broken.rglob("*steps*.riegeli"):
        path.write_bytes(b"not a riegeli file")
    job = start(c, sid, archive="zip")
    done = wait_done(c, job["id"])
    assert done["state"] == "failed"
    assert world["episodes"][2].id in done["message"]
    assert _leftovers(settings.data_root) == []


def test_bad_inputs(world, db) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    url = f"/api/studies/{sid}/exports"

    def post(selection: dict, **options) -> tuple[int, str]:  # type: ignore[no-untyped-def]
        res = c.post(url, json={"selection": selection, "options": options})
        return res.status_code, json.dumps(res.json())

    assert post({"episode_ids": []})[0] == 422
    status, text = post({"tags": ["nonexistent"]})
    assert status == 422 and "No episode matches" in text
    assert post({"statuses": ["failed"]})[0] == 422
    status, text = post({"episode_ids": ["f" * 32]})
    assert status == 422 and "f" * 32 in text
    status, text = post({"environments": []})  # both envs: different spaces
    assert status == 422 and "different observation or action spaces" in text
    assert post({"environments": ["cartpole"]}, name="Not A Name")[0] == 422
    assert post({"environments": ["cartpole"]}, archive="rar")[0] == 422
    assert post({"environments": ["cartpole"]}, format="hdf5")[0] == 422
    assert db.query(ExportJob).count() == 0  # nothing was queued


def test_other_designers_episode_is_named(world, factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    stranger = factory.user()
    theirs = factory.study(stranger)
    ep = Inserter(db, settings.data_root).add(theirs, recorded["cartpole"][4])
    res = world["client"].post(
        f"/api/studies/{world['study'].id}/exports",
        json={"selection": {"episode_ids": [world["episodes"][0].id, ep.id]}},
    )
    assert res.status_code == 422 and ep.id in res.text


def test_job_of_a_dead_replica_is_requeued_and_runs_again(world, db, settings) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    job = start(c, world["study"].id, name="demo", archive="zip")
    assert wait_done(c, job["id"])["state"] == "succeeded"
    # As a replica killed mid-export leaves it: running, claimed, heartbeat long past
    row = db.get(ExportJob, job["id"])
    db.refresh(row)
    row.state, row.claimed_by, row.output_path = JobState.running, "dead-replica", None
    row.heartbeat_at = row.created_at - timedelta(seconds=settings.job_stale_s + 1)
    db.commit()
    leftover = export_dir(settings.data_root, job["id"])
    for p in leftover.iterdir():
        p.unlink()
    (leftover / "half.zip").write_bytes(b"half")
    done = wait_done(c, job["id"])  # the app's poller finds the stale claim
    assert done["state"] == "succeeded", done
    db.refresh(row)
    assert row.attempts == 2 and row.claimed_by != "dead-replica"
    assert [p.name for p in leftover.iterdir()] == ["demo.zip"]  # half.zip went with its run


def test_download_outside_data_root_is_refused(world, db) -> None:  # type: ignore[no-untyped-def]
    c = world["client"]
    job = start(c, world["study"].id, archive="zip")
    assert wait_done(c, job["id"])["state"] == "succeeded"
    row = db.get(ExportJob, job["id"])
    db.refresh(row)
    row.output_path = "../../../etc/passwd"
    db.commit()
    assert c.get(f"/api/exports/{job['id']}/download").status_code == 400


# --- found by tests/test_api_fuzz.py --------------------------------------------------------
def test_inputs_the_database_cannot_hold_are_422(world) -> None:  # type: ignore[no-untyped-def]
    client, study = world["client"], world["study"]
    for selection in [
        {"episode_ids": ["a\x00"]},
        {"participants": ["\x00"]},
        {"tags": ["t\x00"]},
    ]:
        res = client.post(f"/api/studies/{study.id}/exports", json={"selection": selection})
        assert res.status_code == 422, (selection, res.text)
    for job_id in [2**31, 2**70]:
        assert client.get(f"/api/exports/{job_id}").status_code == 422
        assert client.get(f"/api/exports/{job_id}/download").status_code == 422


def test_user_id_beyond_integer_selects_nothing(world) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].post(
        f"/api/studies/{world['study'].id}/exports",
        json={"selection": {"participants": [f"user:{2**70}"]}},
    )
    assert res.status_code == 422, res.text
    assert res.json()["detail"][0]["msg"] == "No episode matches the selection"


def test_bad_value_fails_the_job_naming_it(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.export.conftest import make_cartpole
    from tests.export.recordings import record_episode

    # a log recorded before the protocol refused such numbers: client_ms 1e300 at timestep 2
    rec = record_episode(
        make_cartpole(5), tmp_path / "bad", env_id="CartPole-v1", episode_id="bad".ljust(32, "0"),
        seed=3, bad_timing={2: {"input_sent": 1e300}},
    )  # fmt: skip
    Inserter(db, settings.data_root).add(world["study"], rec)
    job = start(world["client"], world["study"].id, archive="zip")
    done = wait_done(world["client"], job["id"])
    assert done["state"] == "failed"
    assert done["message"].startswith(
        f"episode {rec.episode_id}: step 1, field timing/input_sent_ms: 1e+300"
    ), done["message"]
    assert _leftovers(settings.data_root) == []


# --- exports on Apache Beam ------------------------------------------------------------------
def _dataset_files(data_root: Path, job: dict) -> dict[str, bytes]:
    out = export_dir(data_root, job["id"]) / job["name"]
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.mark.database_plays_no_part
def test_beam_job_writes_what_the_single_process_job_writes(world, settings) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    settings.beam_workers, settings.beam_running_mode = 2, "multi_processing"
    beam = start(c, sid, name="same", archive="folder", engine="beam")
    assert beam["options"]["engine"] == "beam"
    beam = wait_done(c, beam["id"])
    single = wait_done(c, start(c, sid, name="same", archive="folder", engine="single")["id"])
    assert beam["state"] == single["state"] == "succeeded", (beam, single)
    assert single["options"]["engine"] == "single"
    assert (beam["episodes_done"], beam["steps_done"]) == (3, single["steps_total"])
    files = _dataset_files(settings.data_root, beam)
    assert any(".tfrecord-" in name for name in files)
    assert files == _dataset_files(settings.data_root, single)


def test_beam_engine_chosen_by_size_and_refused_for_other_formats(world, settings) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    settings.beam_min_steps = 10**9
    assert start(c, sid, archive="folder")["options"]["engine"] == "single"
    settings.beam_min_steps = 1
    job = start(c, sid, archive="folder")
    assert job["options"]["engine"] == "beam"
    assert start(c, sid, format="envlogger", archive="folder")["options"]["engine"] == "single"
    res = c.post(
        f"/api/studies/{sid}/exports",
        json={
            "selection": {"environments": ["cartpole"]},
            "options": {"format": "minari", "engine": "beam"},
        },
    )
    assert res.status_code == 422 and "tfds format" in res.json()["detail"][0]["msg"]
    for j in c.get(f"/api/studies/{sid}/exports").json():
        assert wait_done(c, j["id"])["state"] == "succeeded"


def test_beam_job_cancel_removes_output(world, settings) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    job = start(c, sid, engine="beam")
    assert c.post(f"/api/exports/{job['id']}/cancel").status_code == 200
    done = wait_done(c, job["id"])
    assert done["state"] == "canceled" and done["download_url"] is None
    assert _leftovers(settings.data_root) == []


def _live_processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every process that is not a zombie."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            out[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return out


@pytest.mark.database_plays_no_part
def test_stopped_beam_job_takes_its_workers_with_it(world, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from server.export import runner as jobs

    monkeypatch.setattr(jobs, "CANCEL_GRACE_S", 0.0)  # stop the job's process at once
    settings.beam_workers, settings.beam_running_mode = 2, "multi_processing"
    c, sid = world["client"], world["study"].id
    job = start(c, sid, engine="beam")
    group, end = None, time.monotonic() + 120
    while group is None and time.monotonic() < end:  # the job's process and its Beam workers
        procs = _live_processes()
        leaders = [p for p, (ppid, pgid) in procs.items() if ppid == os.getpid() and pgid == p]
        for leader in leaders:
            if sum(1 for _, pgid in procs.values() if pgid == leader) >= 3:
                group = leader
        time.sleep(0.05)
    assert group is not None, "no export process with two Beam workers appeared"
    assert c.post(f"/api/exports/{job['id']}/cancel").status_code == 200
    assert wait_done(c, job["id"])["state"] == "canceled"
    end = time.monotonic() + 30
    while any(pgid == group for _, pgid in _live_processes().values()):
        assert time.monotonic() < end, "processes of the export's group outlived it"
        time.sleep(0.1)
    assert _leftovers(settings.data_root) == []


def test_lerobot_format_job_with_videos(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    job = start(c, sid, format="lerobot", archive="zip", name="robo", videos=True)
    assert job["format"] == "lerobot"
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        names = set(zf.namelist())
        info = json.loads(zf.read("robo/robo/meta/info.json"))
        card = zf.read("robo/README.md").decode()
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 3
    assert {
        "robo/robo/meta/stats.json",
        "robo/robo/meta/tasks.parquet",
        "robo/robo/meta/episodes/chunk-000/file-000.parquet",
        "robo/robo/data/chunk-000/file-000.parquet",
        "robo/robo/videos/observation.images.frame/chunk-000/file-000.mp4",
    } <= names
    ids = [e.id for e in world["episodes"][:3]]
    assert {f"robo/episode_videos/{i}.mp4" for i in ids} <= names
    assert 'LeRobotDataset("rlds-studio/robo"' in card


def test_lerobot_bad_requests(world) -> None:  # type: ignore[no-untyped-def]
    c, sid = world["client"], world["study"].id
    # mixed environments are refused before queuing, as for every format
    res = c.post(
        f"/api/studies/{sid}/exports",
        json={"selection": {"environments": []}, "options": {"format": "lerobot"}},
    )
    assert res.status_code == 422, res.text
    assert "different observation or action spaces" in res.json()["message"]
    bad = c.post(f"/api/studies/{sid}/exports", json={"options": {"format": "lerobot2"}})
    assert bad.status_code == 422
    # a step tag name with '/' has no LeRobot column: refused before queuing, by name
    ep = world["episodes"][0]
    tagged = c.post(f"/api/episodes/{ep.id}/step-tags", json={"name": "hit/miss", "start": 1})
    assert tagged.status_code in (200, 201), tagged.text
    res = c.post(
        f"/api/studies/{sid}/exports",
        json={"selection": {"episode_ids": [ep.id]}, "options": {"format": "lerobot"}},
    )
    assert res.status_code == 422, res.text
    assert "step tag 'hit/miss'" in res.json()["message"]
