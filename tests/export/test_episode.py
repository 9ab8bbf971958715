"""Realigning envlogger timesteps into RLDS steps, against what the recorder fed envlogger."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from server.export.episode import read_episode
from server.export.errors import InvalidEpisodeError
from server.export.timings import realign_timings
from server.recording.writer import EpisodeWriter
from tests.export.recordings import GymDmEnv, Recording, to_spec_value


def test_sar_alignment(recordings: dict[str, list[Recording]]) -> None:
    for rec in recordings["cartpole"] + recordings["lunar"]:
        ep = read_episode(rec.log_dir)
        n = rec.num_steps
        assert len(ep) == n
        for t in range(n):
            np.testing.assert_array_equal(ep.observations[t], rec.observations[t])
        for t in range(n - 1):
            np.testing.assert_array_equal(ep.actions[t], rec.actions[t])
            assert ep.rewards[t] == rec.rewards[t]
        # The final observation: zero-filled action, reward and discount.
        np.testing.assert_array_equal(ep.actions[-1], np.zeros_like(rec.actions[0]))
        assert ep.rewards[-1] == 0.0 and ep.discounts[-1] == 0.0
        assert ep.is_first == [True] + [False] * (n - 1)
        assert ep.is_last == [False] * (n - 1) + [True]
        assert ep.is_terminal == [False] * (n - 1) + [rec.terminated]
        assert ep.total_reward == pytest.approx(sum(rec.rewards))


def test_termination_and_truncation(recordings: dict[str, list[Recording]]) -> None:
    terminated, truncated = recordings["cartpole"][0], recordings["cartpole"][1]
    assert terminated.terminated and truncated.truncated  # the fixture's premise
    ep = read_episode(terminated.log_dir)
    assert ep.is_terminal[-1] and ep.discounts[-2] == 0.0 and ep.terminated
    ep = read_episode(truncated.log_dir)
    assert not ep.is_terminal[-1] and ep.discounts[-2] == 1.0 and not ep.terminated


def test_metadata_moves_with_its_step(recordings: dict[str, list[Recording]]) -> None:
    rec = recordings["pong"][0]
    ep = read_episode(rec.log_dir)
    assert ep.frames == rec.frames  # the frame of o_t stays with o_t
    assert ep.infos == rec.infos
    assert [json.loads(x) for x in ep.inputs] == rec.inputs + [None]  # input goes with a_t
    for t in range(len(ep) - 1):
        timing = ep.timings[t]
        assert timing["input_sent_ms"] == rec.timings[t + 1]["input_sent"]
        assert timing["applied_ms"] == rec.timings[t + 1]["applied"]
        assert timing["seen_step"] == t
        assert (timing["frame_sent_ms"], timing["frame_drawn_ms"]) == rec.frame_times[t]
    assert ep.timings[-1]["input_sent_ms"] == -1 and ep.timings[-1]["frame_drawn_ms"] == -1
    assert ep.log_metadata["episode_id"] == rec.episode_id and ep.log_metadata["seed"] == rec.seed


def test_realign_timings_latency_and_unknowns() -> None:
    raw = [
        {"applied": 5, "acks": []},
        {"input_sent": 10, "input_recv": 12, "applied": 14, "seen_step": 0, "acks": [[0, 6, 8]]},
        {"input_sent": 20, "acks": [[1, 16, 30]]},
    ]
    out = realign_timings(raw)
    assert out[0]["input_sent_ms"] == 10 and out[0]["frame_drawn_ms"] == 8
    assert out[0]["input_latency_ms"] == 30 - 10  # input sent -> its frame drawn
    assert out[1]["input_recv_ms"] == -1 and out[1]["input_latency_ms"] == -1
    assert out[2]["frame_sent_ms"] == -1 and out[2]["applied_ms"] == -1


def test_speed_and_quality_stay_with_their_observation(
    recordings: dict[str, list[Recording]],
) -> None:
    played = read_episode(recordings["cartpole"][0].log_dir)  # changing speeds and qualities
    rec = recordings["cartpole"][0]
    assert [t["speed"] for t in played.timings] == [r["speed"] for r in rec.timings]
    assert [t["jpeg_quality"] for t in played.timings] == [r["jpeg_quality"] for r in rec.timings]
    assert len({t["speed"] for t in played.timings}) > 1  # the fixture's premise
    sync = read_episode(recordings["cartpole"][1].log_dir)  # no speed recorded: 1.0
    assert {t["speed"] for t in sync.timings} == {1.0}
    cut = played.truncated_at(3)  # the last step keeps o_t's own values
    assert cut.timings[-1]["speed"] == rec.timings[3]["speed"]
    assert cut.timings[-1]["jpeg_quality"] == rec.timings[3]["jpeg_quality"]


def test_realign_timings_speed_and_quality_defaults() -> None:
    out = realign_timings([{"speed": 0.5, "jpeg_quality": 90}, {"speed": True}, {"speed": "2"}])
    assert (out[0]["speed"], out[0]["jpeg_quality"]) == (0.5, 90)
    assert out[1]["speed"] == out[2]["speed"] == 1.0  # none recorded (not a number)
    assert out[1]["jpeg_quality"] == -1


def test_camera_stays_with_its_frame(recordings: dict[str, list[Recording]]) -> None:
    rec = recordings["minigrid"][0]  # the player switched cameras at steps 3 and 7
    played = read_episode(rec.log_dir)
    assert played.cameras == [r["camera"] for r in rec.timings]
    assert played.cameras[2:4] == ["front", "wrist"] and played.cameras[6:8] == ["wrist", "front"]
    assert played.truncated_at(4).cameras == played.cameras[:5]
    one = read_episode(recordings["cartpole"][1].log_dir)  # one camera: none recorded
    assert set(one.cameras) == {""} and len(one.cameras) == len(one)


def test_truncated_at(recordings: dict[str, list[Recording]]) -> None:
    rec = recordings["cartpole"][0]
    ep = read_episode(rec.log_dir)
    cut = ep.truncated_at(3)
    assert len(cut) == 4 and cut.is_last[-1] and not cut.is_terminal[-1]
    assert cut.rewards[-1] == 0.0 and cut.inputs[-1] == "null"
    assert cut.total_reward == pytest.approx(sum(rec.rewards[:3]))
    assert ep.timings[3]["input_sent_ms"] != -1  # the original is untouched
    with pytest.raises(InvalidEpisodeError):
        ep.truncated_at(len(ep))


def test_trimmed_reflags_the_kept_steps_and_keeps_their_values(
    recordings: dict[str, list[Recording]],
) -> None:
    rec = recordings["cartpole"][0]  # terminated
    ep = read_episode(rec.log_dir)
    n = len(ep)
    cut = ep.trimmed(2, 1)  # steps 2..n-2 kept
    assert len(cut) == n - 3
    assert cut.is_first == [True] + [False] * (n - 4)
    assert cut.is_last == [False] * (n - 4) + [True]
    assert not any(cut.is_terminal) and not cut.terminated  # a cut end is a truncation
    assert cut.ended_at_trim and not cut.ended_at_tag
    for t in range(n - 3):  # value for value: the recorded step 2 + t
        np.testing.assert_array_equal(cut.observations[t], ep.observations[2 + t])
    assert cut.rewards[:-1] == ep.rewards[2 : n - 2] and cut.actions[:-1] == ep.actions[2 : n - 2]
    assert cut.rewards[-1] == 0.0  # the last step's, as every RLDS last step's
    start = ep.trimmed(3, 0)  # the terminal step kept: still terminal, flags moved
    assert start.is_first[0] and start.is_terminal[-1] and start.terminated
    assert not start.ended_at_trim and start.rewards == ep.rewards[3:]
    assert ep.is_first[0] and len(ep) == n  # the original is untouched
    with pytest.raises(InvalidEpisodeError, match=f"of {n} steps: keep at least 2"):
        ep.trimmed(n - 2, 1)


def test_missing_log_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(InvalidEpisodeError, match="no episode log"):
        read_episode(tmp_path / "nope")


def test_interrupted_log_ends_unterminated(tmp_path) -> None:
    """An abandoned episode's log stops at a MID timestep: its last step is not terminal."""
    env = gym.make("CartPole-v1")
    dm = GymDmEnv(env, 5, lambda action, info: None)
    dm.metadata_now = {"frame": b"\xff\xd8", "input": "null", "timing": "{}", "info": "{}"}
    writer = EpisodeWriter(dm, tmp_path / "log", {"episode_id": "x"}, lambda *a: dm.metadata_now)
    writer.reset()
    for _ in range(3):
        writer.step(to_spec_value(1, dm.action_spec()))
    writer.finalize()
    ep = read_episode(tmp_path / "log")
    assert len(ep) == 4 and ep.is_last[-1] and not ep.is_terminal[-1]
    assert ep.discounts[-2] == 1.0 and ep.actions[-1] == 0


def test_control_moves_with_its_action_and_gives_the_intervention_signals(
    recordings: dict[str, list[Recording]],
) -> None:
    from server.services.review import quality

    rec = recordings["lunar"][0]  # recorded with a policy (tests/export/conftest.py)
    episode = read_episode(rec.log_dir)
    assert episode.autonomous
    n = len(rec.actions)
    want = [1 if rec.controls[t]["source"] == "policy" else 0 for t in range(n)]
    assert episode.control_sources == [*want, 0]
    for t in range(n):
        record = rec.controls[t]
        np.testing.assert_array_equal(episode.human_actions[t], np.float32(record["human"]))
        assert episode.has_policy_action[t] == (record["policy"] is not None)
    assert not episode.has_policy_action[-1] and not episode.human_actions[-1].any()
    # takeovers: policy → player where the policy still proposed (t % 5 == 4 it did not)
    takeovers = sum(
        1
        for t in range(1, n)
        if want[t - 1] == 1 and want[t] == 0 and rec.controls[t]["policy"] is not None
    )
    signals = quality.from_recorded(episode, None)
    assert signals.interventions == takeovers and takeovers > 0
    assert signals.intervention_share == pytest.approx(want.count(0) / n)
    plain = read_episode(recordings["cartpole"][1].log_dir)  # no policy: the player's
    assert not plain.autonomous and set(plain.control_sources) == {0}
    assert quality.from_recorded(plain, None).interventions is None
