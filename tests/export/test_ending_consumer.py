"""How an episode ended, in every format, as researchers load it: a participant plays two
CartPole episodes through the play socket (a real worker), ends the first early ("I'm done",
``end_episode``) and lets the pole fall in the second; TFDS+rlds (plain and OXE),
LeRobotDataset and minari read ``ended_by`` participant and a last step that is not
terminal for the first, ``ended_by`` environment and a terminal one for the second;
envlogger's tags.json says the same."""

from __future__ import annotations

import json

import pytest

from server.export import EpisodeInput, ExportOptions, export_dataset
from server.schemas.exports import ExportSelection
from server.services.exports import selection as export_selection
from tests.export.conftest import ROOT
from tests.export.consumers import check_report
from tests.player.conftest import Player, spec

DOCS = str(ROOT / "docs" / "export.md")
CARTPOLE = {"id": "cartpole", "name": "CartPole", "mode": "sync", "allow_end": True,
            "source": {"kind": "gymnasium", "id": "CartPole-v1"}, "seeds": [3]}  # fmt: skip


@pytest.fixture
def played(factory, db):  # type: ignore[no-untyped-def]
    """The two episodes: ``{"participant": id, "environment": id}``, and the study."""
    owner = factory.user()
    study = factory.study(owner, spec(CARTPOLE))
    ids = {}
    with factory.client(owner).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        ids["participant"] = player.start("cartpole")["id"]
        for i in range(4):
            player.step(["ArrowRight"], 1000.0 + i)
        player.send(type="end_episode")
        assert player.until("episode_ended")["ended_by"] == "participant"
        player.send(type="save", keep=True)
        player.until("episode_saved")
        player.send(type="start", env_id="cartpole")
        ids["environment"] = player.until("episode_started")["episode"]["id"]
        player.frame()
        ended = None
        for i in range(200):  # pushed one way, the pole falls within a few dozen steps
            player.send(type="input", keys=["ArrowRight"], client_ms=2000.0 + i)
            while ended is None:  # its frame, or (an input after the last step) the end
                got = player.receive()
                if isinstance(got, tuple):
                    break
                ended = got if got["type"] == "episode_ended" else None
            if ended is not None:
                break
        assert ended is not None and ended["ended_by"] == "environment"
        player.send(type="save", keep=True)
        player.until("episode_saved")
    return {"ids": ids, "study": study}


def _inputs(db, settings, played) -> list[EpisodeInput]:  # type: ignore[no-untyped-def]
    study = played["study"]
    selection = ExportSelection(episode_ids=list(played["ids"].values()))
    episodes = export_selection.resolve(db, study, selection)
    return export_selection.episode_inputs(
        db, episodes, settings.secret_key, settings.data_root,
        export_selection.instructions_of(study),
    )  # fmt: skip


def _check(report: dict, played, transitions: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The participant's episode: truncated (5 observations, 4 actions); the other terminal."""
    got = report["episodes"]
    mine, env = got[played["ids"]["participant"]], got[played["ids"]["environment"]]
    assert (mine["ended_by"], mine["env_outcome"]) == ("participant", "")
    assert mine["terminal"] is False and mine["truncated"] is True
    assert mine["length"] == (4 if transitions else 5)
    assert env["ended_by"] == "environment" and env["terminal"] is True
    assert env["truncated"] is False


def test_the_apps_inputs_say_who_ended_each_episode(played, db, settings) -> None:  # type: ignore[no-untyped-def]
    inputs = {i.episode_id: i for i in _inputs(db, settings, played)}
    assert inputs[played["ids"]["participant"]].ended_by == "participant"
    assert inputs[played["ids"]["environment"]].ended_by == "environment"


@pytest.mark.consumer
def test_rlds_plain_and_oxe_say_ended_by_participant_and_not_terminal(played, db, settings,
                                                                     tmp_path) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    inputs = _inputs(db, settings, played)
    for profile in ("", "oxe"):
        result = export_dataset(inputs, ExportOptions(name=f"ended{profile}", profile=profile),
                                tmp_path / f"out{profile}")  # fmt: skip
        _check(check_report("rlds", "ending", "rlds", str(result.data_dir)), played)


@pytest.mark.consumer
def test_lerobot_says_ended_by_participant_and_not_terminal(played, db, settings,
                                                            tmp_path) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    result = export_dataset(
        _inputs(db, settings, played), ExportOptions(name="ds", format="lerobot"), tmp_path / "o"
    )
    report = check_report("lerobot", "ending", "lerobot", DOCS, str(result.path), "ds",
                          timeout=580)  # fmt: skip
    _check(report, played)


@pytest.mark.consumer
def test_minari_says_ended_by_participant_and_truncated(played, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = export_dataset(
        _inputs(db, settings, played), ExportOptions(name="ds", format="minari"), tmp_path / "o"
    )
    report = check_report("minari", "ending", "minari", DOCS, str(result.path), "ds-v1")
    _check(report, played, transitions=True)


def test_envlogger_tags_json_says_who_ended_it(played, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = export_dataset(
        _inputs(db, settings, played), ExportOptions(format="envlogger"), tmp_path / "logs"
    )
    for who, episode_id in played["ids"].items():
        doc = json.loads((result.path / "episodes" / episode_id / "tags.json").read_text())
        assert (doc["ended_by"], doc["env_outcome"]) == (who, "")
    # the dataset card counts them
    card = (result.path / "README.md").read_text()
    assert "- Ended by (each episode's `ended_by`): 1 environment, 1 participant" in card
