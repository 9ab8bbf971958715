"""Feedback studies' judgements in every format's episode metadata, loaded as researchers
load them: a played study's five real recorded CartPole episodes are judged through the judge
API by three Prolific participants (compare and rate questions); each episode's wins,
losses, ties, ratings and mean rating, counted here from the answers given, are what
TFDS+rlds, LeRobotDataset and minari read back (an episode never judged: ``judged`` false
and zeros); the RLDS one through the app's export job."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from server.export import EpisodeInput, ExportOptions, export_dataset
from server.export.judgements import JudgementSummary
from server.schemas.exports import ExportSelection
from server.services.exports import selection as export_selection
from tests.api.routes.judged import played
from tests.export.conftest import ROOT
from tests.export.consumers import check_report
from tests.export.expected import expected_episode, save_expected
from tests.export.judgements import PLAN, judge
from tests.export.test_consumer import oxe_expected

DOCS = str(ROOT / "docs" / "export.md")


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """The played study, its judged episodes and the summaries the answers make."""
    source = played(db, factory, settings.data_root, recorded)
    study = source.make(db, factory, clip_steps=4, judgements_per_participant=6)
    summaries = judge(db, factory, study)
    return {"source": source, "summaries": summaries, "recs": recorded["cartpole"]}


def inputs_of(db, settings, world) -> list[EpisodeInput]:  # type: ignore[no-untyped-def]
    """The exporter's inputs, as the app makes them of the rows."""
    study = world["source"].source
    ids = [e.id for e in world["source"].episodes]
    episodes = export_selection.resolve(db, study, ExportSelection(episode_ids=ids))
    instructions = export_selection.instructions_of(study)
    return export_selection.episode_inputs(
        db, episodes, settings.secret_key, settings.data_root, instructions
    )


def expected_of(world, inputs: list[EpisodeInput]) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    recs = {r.episode_id: r for r in world["recs"]}
    return [
        expected_episode(
            recs[i.episode_id],
            agent_id=i.agent_id,
            instruction=i.instruction,
            judgements=world["summaries"].get(i.episode_id),
        )
        for i in inputs
    ]


def test_the_judging_gave_wins_ties_and_ratings(world) -> None:  # type: ignore[no-untyped-def]
    """The plan itself: every kind of count, and a mean float32 cannot hold exactly."""
    got = world["summaries"].values()
    assert sum(s.wins for s in got) == sum(s.losses for s in got) > 0
    assert sum(s.ratings for s in got) > 0 and sum(s.ties for s in got) > 0
    assert len(world["summaries"]) <= len(world["recs"])
    answered = sum(s.wins + s.ties / 2 + s.ratings for s in got)
    assert answered <= 6 * len(PLAN)  # cant_tell counts nowhere


def test_the_apps_inputs_carry_each_episodes_summary(world, db, settings) -> None:  # type: ignore[no-untyped-def]
    """The exporter's inputs the app builds (one summary query) hold the counted summaries;
    an episode nobody judged holds zeros."""
    inputs = inputs_of(db, settings, world)
    assert len(inputs) == 5
    for ep in inputs:
        assert ep.judgements == world["summaries"].get(ep.episode_id, JudgementSummary())


@pytest.mark.consumer
def test_rlds_export_job_episode_metadata_loaded_by_tfds_and_rlds(world, factory, db, settings,
                                                                 tmp_path) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    from tests.api.routes.test_exports import start, wait_done

    c = factory.client(world["source"].owner)
    job = start(c, world["source"].source.id, {"environments": ["cartpole"]}, name="judged_ds",
                archive="zip")  # fmt: skip
    done = wait_done(c, job["id"])
    assert done["state"] == "succeeded", done
    with zipfile.ZipFile(io.BytesIO(c.get(done["download_url"]).content)) as zf:
        zf.extractall(tmp_path / "x")
    data_dir = next((tmp_path / "x" / "judged_ds").rglob("dataset_info.json")).parent
    report = check_report("rlds", "judgements", str(data_dir))
    assert set(report["episodes"]) == {e.id for e in world["source"].episodes}
    for eid, got in report["episodes"].items():
        want = world["summaries"].get(eid, JudgementSummary())
        assert got["judged"] is want.judged
        assert (got["judgement_wins"], got["judgement_losses"], got["judgement_ties"],
                got["judgement_ratings"]) == want.counts()  # fmt: skip
        assert got["judgement_mean_rating"] == (want.mean_rating or 0.0)  # exact: float64
        assert got["dtypes"] == {"judged": "bool", "judgement_wins": "int64",
                                 "judgement_losses": "int64", "judgement_ties": "int64",
                                 "judgement_ratings": "int64",
                                 "judgement_mean_rating": "float64"}  # fmt: skip
    card = (tmp_path / "x" / "judged_ds" / "README.md").read_text()
    assert f"- Judged in feedback studies: {len(world['summaries'])} of 5 episodes" in card
    # every other value as recorded, with the same fields (rlds transformations included)
    inputs = inputs_of(db, settings, world)
    save_expected(tmp_path / "expected.npz", expected_of(world, inputs))
    values = check_report("rlds", "rlds", "values", str(data_dir), str(tmp_path / "expected.npz"))
    assert values["episodes"] == 5


@pytest.mark.consumer
@pytest.mark.database_plays_no_part
def test_oxe_profile_episode_metadata(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    inputs = inputs_of(db, settings, world)
    options = ExportOptions(name="oxe_judged", profile="oxe")
    result = export_dataset(inputs, options, tmp_path / "out")
    report = check_report("rlds", "judgements", str(result.data_dir))
    for eid, got in report["episodes"].items():
        want = world["summaries"].get(eid, JudgementSummary())
        assert (got["judgement_wins"], got["judgement_losses"]) == (want.wins, want.losses)
        assert got["judgement_mean_rating"] == (want.mean_rating or 0.0)
    expected = [oxe_expected(w, str(w["language_instruction"])) for w in expected_of(world, inputs)]
    save_expected(tmp_path / "expected.npz", expected)
    out = check_report("rlds", "rlds", "oxe", DOCS, str(result.path), "oxe_judged",
                       str(tmp_path / "expected.npz"))  # fmt: skip
    assert out["episodes"] == 5


@pytest.mark.consumer
@pytest.mark.database_plays_no_part
def test_lerobot_episodes_metadata(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """lerobot_check compares each episode's judgement fields (values and Python types)."""
    inputs = inputs_of(db, settings, world)
    result = export_dataset(inputs, ExportOptions(name="ds", format="lerobot"), tmp_path / "out")
    recs = {r.episode_id: r for r in world["recs"]}
    expected = []
    for want, ep in zip(expected_of(world, inputs), inputs, strict=True):
        applied = np.asarray([t["applied"] for t in recs[ep.episode_id].timings], dtype=np.float64)
        task = want["language_instruction"] or "CartPole-v1"
        expected.append({**want, "_times": (applied - applied[0]) / 1000.0, "_task": task})
    save_expected(tmp_path / "expected.npz", expected)
    report = check_report("lerobot", "lerobot", DOCS, str(result.path), "ds",
                          str(tmp_path / "expected.npz"), str(tmp_path / "frames.npz"),
                          timeout=580)  # fmt: skip
    assert report["episodes"] == 5


@pytest.mark.consumer
@pytest.mark.database_plays_no_part
def test_minari_episode_metadata(world, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """minari_check compares each episode's judgement fields (values and Python types)."""
    inputs = inputs_of(db, settings, world)
    result = export_dataset(inputs, ExportOptions(name="ds", format="minari"), tmp_path / "out")
    save_expected(tmp_path / "expected.npz", expected_of(world, inputs))
    report = check_report("minari", "minari", DOCS, str(result.path), "ds-v1",
                          str(tmp_path / "expected.npz"))  # fmt: skip
    assert report["episodes"] == 5


@pytest.mark.database_plays_no_part
def test_envlogger_tags_json_and_minari_files(world, db, settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The files themselves: tags.json and Minari's metadata.json hold the summary as JSON
    numbers (the mean exact), zeros for an episode never judged."""
    inputs = inputs_of(db, settings, world)
    logs = export_dataset(inputs, ExportOptions(format="envlogger"), tmp_path / "logs")
    minari = export_dataset(inputs, ExportOptions(name="m", format="minari"), tmp_path / "m")
    metas = sorted(minari.data_dir.glob("*/metadata.json")) if minari.data_dir else []
    by_id = {json.loads(p.read_text())["episode_id"]: json.loads(p.read_text()) for p in metas}
    for ep in inputs:
        want = world["summaries"].get(ep.episode_id, JudgementSummary()).fields()
        doc = json.loads((logs.path / "episodes" / ep.episode_id / "tags.json").read_text())
        for got in (doc, by_id[ep.episode_id]):
            assert {k: got[k] for k in want} == want
            assert isinstance(got["judgement_mean_rating"], float)
