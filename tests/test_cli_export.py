"""``rlds-studio export`` and ``rlds-studio episodes`` on really recorded episodes."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.api.routes.recorded import Inserter, two_env_spec
from tests.factories import run_cli

SPREAD = True  # independent tests: spread over the xdist workers (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def study(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A study with two completed CartPole episodes, one rejected, one MountainCar."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    ins.add(study, cp[0], tags=("good",), minutes_ago=3)
    ins.add(study, cp[1], minutes_ago=2)
    ins.add(study, cp[2], status="rejected", minutes_ago=1)
    ins.add(study, recorded["mountaincar"][0], env_key="mountaincar")
    return study


def test_episodes_lists_the_study(settings, study, recorded) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(settings, "episodes", "--study", str(study.id))
    assert res.returncode == 0, res.stderr
    for rec in recorded["cartpole"][:3]:
        (line,) = [row for row in res.stdout.splitlines() if rec.episode_id in row]
        # the actions taken, as the pages count steps: one fewer than the recorded RLDS steps
        assert line.split()[4] == str(rec.num_steps - 1)
    assert "[good]" in res.stdout and "4 episode(s)" in res.stdout
    res = run_cli(settings, "episodes", "--study", str(study.id), "--status", "rejected")
    assert "1 episode(s)" in res.stdout and recorded["cartpole"][2].episode_id in res.stdout


def test_test_plays_are_listed_only_when_asked(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    ins.add(study, recorded["cartpole"][0])
    ins.add(study, recorded["cartpole"][1], participant=None, user=owner)
    res = run_cli(settings, "episodes", "--study", str(study.id))
    assert "1 episode(s)" in res.stdout and f"user:{owner.id}" not in res.stdout
    res = run_cli(settings, "episodes", "--study", str(study.id), "--include-tests")
    assert "2 episode(s)" in res.stdout and f"user:{owner.id}" in res.stdout


@pytest.mark.database_plays_no_part
def test_export_zip_with_progress(settings, study, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out" / "dataset"
    res = run_cli(
        settings,
        "export",
        "--study",
        str(study.id),
        "--env",
        "cartpole",
        "--archive",
        "zip",
        "--name",
        "cli_ds",
        "--strip",
        "--out",
        str(out),
    )
    assert res.returncode == 0, res.stderr
    steps = recorded["cartpole"][0].num_steps + recorded["cartpole"][1].num_steps
    assert f"exported 2 episodes ({steps} steps)" in res.stdout
    assert "2/2 episodes" in res.stderr and "100%" in res.stderr  # tqdm's bar
    archive = tmp_path / "out" / "dataset.zip"
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        info = json.loads(zf.read("cli_ds/cli_ds/1.0.0/dataset_info.json"))
        features = zf.read("cli_ds/cli_ds/1.0.0/features.json").decode()
    assert "cli_ds/README.md" in names and info["name"] == "cli_ds"
    assert '"frame"' not in features  # --strip dropped the step metadata
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["dataset.zip"]  # no temp left


def test_export_refuses_bad_selections(settings, study, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "x"
    res = run_cli(settings, "export", "--study", str(study.id), "--out", str(out))
    assert res.returncode == 2 and "different observation or action spaces" in res.stderr
    res = run_cli(
        settings, "export", "--study", str(study.id), "--tag", "missing", "--out", str(out)
    )
    assert res.returncode == 2 and "No episode matches" in res.stderr
    res = run_cli(settings, "export", "--study", "999", "--out", str(out))
    assert res.returncode == 1 and "no study 999" in res.stderr
    assert not out.exists()


@pytest.mark.database_plays_no_part
def test_export_envlogger_folder(settings, study, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "raw"
    res = run_cli(
        settings,
        "export",
        "--study",
        str(study.id),
        "--format",
        "envlogger",
        "--env",
        "cartpole",
        "--status",
        "completed",
        "--status",
        "rejected",
        "--exclude-tag",
        "good",
        "--out",
        str(out),
    )
    assert res.returncode == 0, res.stderr
    got = sorted(p.name for p in (out / "episodes").iterdir())
    assert got == sorted(r.episode_id for r in recorded["cartpole"][1:3])


@pytest.mark.database_plays_no_part
def test_export_minari_folder(settings, study, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "mini"
    args = ["export", "--study", str(study.id), "--format", "minari", "--env", "cartpole"]
    res = run_cli(settings, *args, "--name", "mini", "--out", str(out))
    assert res.returncode == 0, res.stderr
    meta = json.loads((out / "mini-v1" / "data" / "metadata.json").read_text())
    assert meta["dataset_id"] == "mini-v1" and meta["total_episodes"] >= 1


@pytest.mark.database_plays_no_part
def test_export_on_beam_matches_one_process(settings, study, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    outs = {}
    for engine in ("beam", "single"):
        outs[engine] = tmp_path / engine
        args = ["--env", "cartpole", "--name", "cli_ds", "--engine", engine]
        res = run_cli(
            settings, "export", "--study", str(study.id), *args, "--out", str(outs[engine])
        )
        assert res.returncode == 0, res.stderr
        assert ("on Apache Beam" in res.stdout) == (engine == "beam")
        assert "2/2 episodes" in res.stderr  # the progress bar followed the pipeline
    files = {
        e: {p.relative_to(o): p.read_bytes() for p in sorted(o.rglob("*")) if p.is_file()}
        for e, o in outs.items()
    }
    assert files["beam"] == files["single"] and len(files["beam"]) >= 4
    res = run_cli(
        settings, "export", "--study", str(study.id), "--env", "cartpole", "--format",
        "envlogger", "--engine", "beam", "--out", str(tmp_path / "raw"),
    )  # fmt: skip
    assert res.returncode == 2 and "Only the tfds format runs on Beam" in res.stderr


@pytest.mark.database_plays_no_part
def test_export_lerobot_folder_with_videos(settings, study, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "robo"
    args = ["export", "--study", str(study.id), "--format", "lerobot", "--env", "cartpole"]
    res = run_cli(settings, *args, "--videos", "--name", "robo", "--out", str(out))
    assert res.returncode == 0, res.stderr
    info = json.loads((out / "robo" / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 2
    for rec in recorded["cartpole"][:2]:
        assert (out / "episode_videos" / f"{rec.episode_id}.mp4").stat().st_size > 0
    # mixed environments are refused before anything is written
    bad = run_cli(settings, "export", "--study", str(study.id), "--format", "lerobot",
                  "--out", str(tmp_path / "bad"))  # fmt: skip
    assert bad.returncode == 2 and "different observation or action spaces" in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_export_split_by_env_leaves_excluded_out(settings, study, db, tmp_path, recorded) -> None:  # type: ignore[no-untyped-def]
    from server.models import Episode

    excluded = db.get(Episode, recorded["cartpole"][1].episode_id)
    excluded.excluded = True
    db.commit()
    out = tmp_path / "both"
    args = ("export", "--study", str(study.id), "--format", "envlogger", "--split-by-env")
    res = run_cli(settings, *args, "--name", "both", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["both_cartpole", "both_mountaincar"]
    got = sorted(p.name for p in (out / "both_cartpole" / "episodes").iterdir())
    assert got == [recorded["cartpole"][0].episode_id]  # the excluded one is left out
    res = run_cli(
        settings, *args, "--include-excluded", "--name", "all", "--out", str(tmp_path / "all")
    )
    assert res.returncode == 0, res.stderr
    assert len(list((tmp_path / "all" / "all_cartpole" / "episodes").iterdir())) == 2
    # --task: only the episodes that drew it ("-": those without a task)
    drew = db.get(Episode, recorded["cartpole"][0].episode_id)
    drew.task_key, drew.instruction = "left", "Push the cart left."
    db.commit()
    res = run_cli(settings, *args, "--include-excluded", "--task", "left", "--name", "left",
                  "--out", str(tmp_path / "left"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [p.name for p in (tmp_path / "left").iterdir()] == ["left_cartpole"]
    got = [p.name for p in (tmp_path / "left" / "left_cartpole" / "episodes").iterdir()]
    assert got == [drew.id]
    res = run_cli(settings, *args, "--task", "Not A Task", "--out", str(tmp_path / "bad"))
    assert res.returncode == 2 and "task" in res.stderr and "Traceback" not in res.stderr
