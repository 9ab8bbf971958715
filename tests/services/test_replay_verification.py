"""Every saved episode is replayed in the background and gets a verdict (docs/review.md,
"Replay verification"): played through the server in real workers, replayed in real
verification processes, logs altered on disk by the test."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from server.models import Episode, EpisodeStatus, ReplayVerdict
from server.runtime.catalog import CATALOG, default_controls
from server.runtime.replay_process import verify_log
from server.runtime.runtimes import APP
from server.services.jobs.replay_checks import check_again, recheck_versions
from server.services.studies.env_check import allowed_environments
from tests.player.conftest import Player, counter_env, row_of, spec
from tests.recording.log_edits import rewrite_log

FAKE = "tests.runtime.fake_envs"


@pytest.fixture
def settings(settings):
    return settings.model_copy(update={"replay_check_workers": 1, "job_poll_s": 0.2})


def wait_verdict(db, episode_id: str, seconds: float = 90.0) -> Episode:
    """Poll until the episode's verdict is no longer pending."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        row = row_of(db, episode_id)
        if row.replay_verdict != ReplayVerdict.pending:
            return row
        time.sleep(0.1)
    raise AssertionError(f"episode {episode_id} still pending: {row.replay_detail}")


def play(client, study, env_id: str, keys: list[list[str]]) -> str:
    """A test play of ``env_id`` through the socket, one input per item of ``keys`` (as many
    as the episode's steps), then saved; the episode's id."""
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        episode = player.start(env_id)
        for pressed in keys:
            player.step(pressed)
        if not any(m.get("type") == "episode_ended" for m in player.seen):
            player.until("episode_ended")
        player.send(type="save", keep=True)
        player.until("episode_saved")
    return str(episode["id"])


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir()) if p.is_file()}  # fmt: skip


def test_a_played_episode_is_verified_and_its_log_is_untouched(factory, db):
    designer = factory.user()
    study = factory.study(designer, spec(counter_env(episode_len=6)))
    client = factory.client(designer)
    episode_id = play(client, study, "counter", [["KeyA"], ["KeyB"], [], ["KeyA"], ["KeyB"], []])
    row = row_of(db, episode_id)
    assert row.status == EpisodeStatus.completed
    before = _digest(Path(row.storage_path))
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.verified, row.replay_detail
    assert row.replay_detail["steps"] == 6 and row.replay_step is None
    assert row.replay_versions.startswith("app: ")
    assert _digest(Path(row.storage_path)) == before  # verification never writes the log


def _alter_action(directory: Path, step: int, action: int) -> None:
    """Another action recorded at ``step`` (what was applied is gone)."""
    rewrite_log(directory, step=step, action=action)


def test_an_altered_action_is_found_at_its_step(factory, db, settings):
    designer = factory.user()
    study = factory.study(designer, spec(counter_env(episode_len=6)))
    settings_off = factory.client(designer)
    episode_id = play(settings_off, study, "counter", [["KeyA"]] * 6)
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.verified
    _alter_action(Path(row.storage_path), 3, 2)  # the player pressed A (1) there
    assert check_again(db, Episode.id == episode_id) == 1
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.diverged
    assert row.replay_step == 3
    difference = row.replay_detail["difference"]
    assert difference["field"] == "reward"  # the counter's reward is its action
    assert difference["recorded"] == "1.0" and difference["replayed"] == "2.0"
    assert "step 3, reward" in row.replay_detail["message"]


def test_an_unseeded_environment_diverges_at_its_first_step(factory, db):
    designer = factory.user()
    source = {"kind": "dm_env", "factory": f"{FAKE}:unseeded", "kwargs": {"episode_len": 4}}
    env = {**counter_env("noisy"), "source": source}
    study = factory.study(designer, spec(env))
    episode_id = play(factory.client(designer), study, "noisy", [["KeyA"]] * 4)
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.diverged
    assert row.replay_step == 1 and row.replay_detail["difference"]["field"] == "reward"


def _catalog_game(key: str, **kwargs: object) -> dict:
    """A catalog entry as the editor adds it, in sync mode (each input one step), cut at 12
    steps by the study's max_steps."""
    entry = CATALOG[key]
    source = entry.source().model_dump()
    source["kwargs"] = {**source["kwargs"], **kwargs}
    return {"id": "game", "name": key, "source": source, "mode": "sync", "fps": entry.fps,
            "max_steps": 12}  # fmt: skip


@pytest.mark.parametrize(
    ("key", "kwargs"),
    [("CartPole", {}), ("Pong", {"repeat_action_probability": 0.0}), ("PickCube", {})],
)
def test_catalog_games_played_through_the_server_are_verified(factory, db, key, kwargs):
    if not CATALOG[key].installed():
        pytest.fail(f"{key}'s suite is part of the test install (make test)")
    designer = factory.user()
    study = factory.study(designer, spec(_catalog_game(key, **kwargs)))
    keys = list(default_controls(CATALOG[key].source()).keys)
    presses = [[keys[i % 2]] for i in range(12)]  # CartPole: left, right, ... stays up
    episode_id = play(factory.client(designer), study, "game", presses)
    row = wait_verdict(db, episode_id, seconds=180)
    assert row.steps == 13 and row.end_reason == "max_steps"  # 12 actions, 13 observations
    assert row.replay_verdict == ReplayVerdict.verified, row.replay_detail
    assert row.replay_detail["steps"] == 12
    dist = {"CartPole": "gymnasium", "Pong": "ale-py", "PickCube": "mujoco"}[key]
    assert f"{dist}==" in row.replay_versions


def _garble(directory: Path) -> None:
    """Every byte of the log's shard files overwritten (a disk that lost them)."""
    for path in directory.rglob("*"):
        if path.is_file() and path.parent != directory and path.stat().st_size:
            path.write_bytes(b"\x00" * path.stat().st_size)


@pytest.mark.parametrize(
    ("damage", "reason", "words"),
    [
        (lambda d: rewrite_log(d, keep=3), "truncated_log", "holds 3 of the episode's 7"),
        (lambda d: rewrite_log(d, seed=-1), "no_seed", "no seed was recorded"),
        (_garble, "unreadable_log", "log holds no step"),
    ],
    ids=["truncated", "no-seed", "garbled"],
)
def test_a_damaged_log_is_not_replayable_and_says_why(factory, db, damage, reason, words):
    designer = factory.user()
    study = factory.study(designer, spec(counter_env(episode_len=6)))
    episode_id = play(factory.client(designer), study, "counter", [["KeyA"]] * 6)
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.verified
    damage(Path(row.storage_path))
    check_again(db, Episode.id == episode_id)
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.not_replayable, row.replay_detail
    assert row.replay_detail["reason"] == reason and words in row.replay_detail["message"]
    assert row.status == EpisodeStatus.completed and row.steps == 7  # the episode untouched


def test_an_environment_that_raises_in_the_replay_is_not_replayable_at_that_step(factory, db):
    designer = factory.user()
    study = factory.study(designer, spec(_catalog_game("CartPole")))
    episode_id = play(factory.client(designer), study, "game", [[k] for k in ["ArrowLeft",
                      "ArrowRight"] * 6])  # fmt: skip
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.verified
    _alter_action(Path(row.storage_path), 4, 7)  # CartPole has actions 0 and 1
    check_again(db, Episode.id == episode_id)
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.not_replayable, row.replay_detail
    assert row.replay_detail["reason"] == "env_raised" and row.replay_step == 4
    assert "raised at step 4 of the replay: AssertionError" in row.replay_detail["message"]


def test_a_replay_past_its_time_is_stopped_and_says_so(factory, db, settings):
    designer = factory.user()
    slow = counter_env(episode_len=4, step_sleep=0.5)  # a step takes half a second
    study = factory.study(designer, spec(slow))
    episode_id = play(factory.client(designer), study, "counter", [["KeyA"]] * 4)
    row = row_of(db, episode_id)
    started = time.monotonic()
    verdict = verify_log(Path(row.storage_path), APP, allowed_environments(settings),
                         end_reason=row.end_reason, timeout_s=1.0, memory_mb=None)  # fmt: skip
    assert time.monotonic() - started < 10  # killed at its bound, not after the 2 s replay
    assert verdict == {"verdict": "not_replayable", "reason": "timeout",
                       "message": "the replay did not finish within 1 s"}  # fmt: skip
    # with time enough, the same log verifies
    verdict = verify_log(Path(row.storage_path), APP, allowed_environments(settings),
                         end_reason=row.end_reason, timeout_s=60.0, memory_mb=2048)  # fmt: skip
    assert verdict["verdict"] == "verified" and verdict["steps"] == 4


def test_episodes_are_checked_again_when_their_environments_package_changes(factory, db):
    designer = factory.user()
    study = factory.study(designer, spec(_catalog_game("CartPole")))
    episode_id = play(factory.client(designer), study, "game", [[k] for k in ["ArrowLeft",
                      "ArrowRight"] * 6])  # fmt: skip
    row = wait_verdict(db, episode_id)
    now = row.replay_versions
    assert row.replay_verdict == ReplayVerdict.verified and now.startswith("app: gymnasium==")
    assert recheck_versions(db) == 0  # nothing changed
    # as if it was checked under another gymnasium than the one installed now
    row.replay_versions = "app: gymnasium==0.0.1"
    db.commit()
    assert recheck_versions(db) == 1
    assert row_of(db, episode_id).replay_verdict == ReplayVerdict.pending
    row = wait_verdict(db, episode_id)
    assert row.replay_verdict == ReplayVerdict.verified and row.replay_versions == now


def test_a_robosuite_episode_is_completed_from_its_states_then_verified(factory, db, settings):
    """Played through the server, a Robosuite step draws only the view shown: the background
    check first draws the observation's images from the recorded states into the log (the
    episode cannot be exported before), then verifies the complete log."""
    from server.export.base import EpisodeInput, check_complete
    from server.recording import deferred
    from server.runtime import runtimes

    if not runtimes.state("robosuite").ok:
        pytest.fail("the robosuite runtime is part of the test install (make runtimes)")
    designer = factory.user()
    study = factory.study(designer, spec(_catalog_game("Robosuite-Lift")))
    presses = [["ArrowDown"]] * 4 + [["KeyS"]] * 4 + [["Space"]] * 4
    episode_id = play(factory.client(designer), study, "game", presses)
    row = row_of(db, episode_id)
    log_dir = Path(row.storage_path)
    row = wait_verdict(db, episode_id, seconds=240)
    assert row.replay_verdict == ReplayVerdict.verified, row.replay_detail
    assert row.replay_detail["steps"] == 12
    assert deferred.pending(log_dir) == []  # complete: exportable
    check_complete(EpisodeInput(log_dir=log_dir, episode_id=episode_id, agent_id="a"))
    assert sorted(p.name for p in log_dir.parent.iterdir()) == [log_dir.name]
