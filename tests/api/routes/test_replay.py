"""The replay API on real logs: everything recorded per step, any page of a 20,000-step
episode, observations in full and as images, the reward profile; sorting and return filters."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import simplejpeg

from server.export.timings import realign_timings
from server.recording.format import episode_videos
from server.services.review import replay
from tests.api.routes.recorded import (
    CARTPOLE_SPEC,
    LONG_STEPS,
    ImageEnv,
    Inserter,
    LongEnv,
    gamepad_input,
    two_env_spec,
)
from tests.export.recordings import record_episode


@pytest.fixture
def long_world(factory, db, settings, long_recording):  # type: ignore[no-untyped-def]
    """A study holding the 20,000-step episode."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    episode = Inserter(db, settings.data_root).add(study, long_recording)
    return {"client": factory.client(owner), "episode": episode, "study": study}


def _page(c, episode_id: str, start: int, limit: int) -> dict:  # type: ignore[no-untyped-def]
    res = c.get(f"/api/episodes/{episode_id}/steps", params={"start": start, "limit": limit})
    assert res.status_code == 200, res.text
    return res.json()


@pytest.mark.parametrize("start", [0, 990, 1000, 12_345, LONG_STEPS - 200])
def test_any_page_of_a_20000_step_episode(start: int, long_world, long_recording) -> None:  # type: ignore[no-untyped-def]
    c, ep, rec = long_world["client"], long_world["episode"], long_recording
    body = _page(c, ep.id, start, 200)
    assert body["total"] == LONG_STEPS and len(body["items"]) == 200
    for item in body["items"]:
        t = item["step"]
        obs = item["observation"][0]
        assert obs["shape"] == [4] and obs["dtype"] == "float32"
        assert obs["values"] == np.asarray(rec.observations[t]).tolist()
        assert item["info"] == {"t": t}
        if t < LONG_STEPS - 1:
            assert item["action"] == int(rec.actions[t])
            assert item["reward"] == LongEnv.reward(t, LONG_STEPS)
            assert item["input"] == gamepad_input(t, rec.actions[t])
            assert item["action_meaning"] == ("right" if int(rec.actions[t]) else "left")
    assert [i["step"] for i in body["items"]] == list(range(start, start + 200))
    last = body["items"][-1]
    assert last["is_last"] == (start == LONG_STEPS - 200)


def test_paging_memory_does_not_grow_with_the_position(long_world) -> None:  # type: ignore[no-untyped-def]
    c, ep = long_world["client"], long_world["episode"]
    _page(c, ep.id, 0, 200)  # open the reader once
    peaks = []
    for start in (0, LONG_STEPS - 200):
        tracemalloc.start()
        _page(c, ep.id, start, 200)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # a page reads its own steps only: the last page costs what the first does
    assert peaks[1] < peaks[0] * 1.5 + 256 * 1024, peaks


def test_past_the_end_and_bad_pages(long_world) -> None:  # type: ignore[no-untyped-def]
    c, ep = long_world["client"], long_world["episode"]
    assert _page(c, ep.id, LONG_STEPS, 10)["items"] == []
    for params in ({"limit": 0}, {"limit": replay.MAX_STEPS_PAGE + 1}, {"start": -1}):
        res = c.get(f"/api/episodes/{ep.id}/steps", params=params)
        assert res.status_code == 422, params


def test_every_recorded_field_of_a_step(world_short, recorded) -> None:  # type: ignore[no-untyped-def]
    c, ep = world_short
    rec = recorded["cartpole"][0]
    items = _page(c, ep.id, 0, 100)["items"]
    latencies = [t["input_latency_ms"] for t in realign_timings(rec.timings)]
    for t, item in enumerate(items):
        assert item["info"] == json.loads(rec.infos[t])
        assert item["has_frame"]
        expected = latencies[t] if latencies[t] != -1 else None
        assert item["latency_ms"] == expected
        # a step without a latency says why
        assert (item["latency_note"] is None) == (expected is not None)
    assert items[-1]["latency_ms"] is None and "no new input" in items[-1]["latency_note"]
    assert items[0]["latency_ms"] is not None  # the recorder's clock: 1 input, 1 drawn frame
    assert items[0]["input"] == rec.inputs[0]
    assert items[0]["discount"] == 1.0 and items[0]["is_first"]
    last = items[-1]
    assert last["is_last"] and last["discount"] == 0.0 and last["input"] is None
    # the short recordings name their env_config without a spec: no controls, no meaning
    assert items[0]["action_meaning"] is None


@pytest.fixture
def world_short(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ep = Inserter(db, settings.data_root).add(study, recorded["cartpole"][0])
    return factory.client(owner), ep


def test_large_and_image_observations(factory, db, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rec = record_episode(
        ImageEnv, tmp_path / ("img".ljust(32, "0")), env_id="cartpole",
        episode_id="img".ljust(32, "0"), seed=1, env_config=CARTPOLE_SPEC,
    )  # fmt: skip
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ep = Inserter(db, settings.data_root).add(study, rec)
    c = factory.client(owner)
    obs = {o["name"]: o for o in _page(c, ep.id, 1, 1)["items"][0]["observation"]}
    assert obs["lidar"]["shape"] == [3000] and "values" not in obs["lidar"]
    assert obs["lidar"]["summary"] == {"min": -1.0, "max": 1.0, "mean": pytest.approx(0, abs=1e-6)}
    assert obs["pixels"]["image"] and not obs["lidar"]["image"]
    full = c.get(f"/api/episodes/{ep.id}/steps/1/observation", params={"key": "lidar"}).json()
    assert full["shape"] == [3000] and len(full["values"]) == 3000
    assert full["values"][-1] == 1.0
    res = c.get(f"/api/episodes/{ep.id}/steps/1/observation.jpg", params={"key": "pixels"})
    assert res.status_code == 200 and res.headers["content-type"] == "image/jpeg"
    picture = simplejpeg.decode_jpeg(res.content)
    assert picture.shape == (24, 32, 3) and picture[12, 4, 0] > 150 and picture[12, 28, 0] < 50
    bad = c.get(f"/api/episodes/{ep.id}/steps/1/observation.jpg", params={"key": "lidar"})
    assert bad.status_code == 422 and "not an image" in bad.json()["message"]
    assert (
        c.get(f"/api/episodes/{ep.id}/steps/1/observation", params={"key": "x"}).status_code == 404
    )
    assert c.get(f"/api/episodes/{ep.id}/steps/99/observation").status_code == 404


def test_reward_profile_keeps_every_spike(long_world) -> None:  # type: ignore[no-untyped-def]
    c, ep = long_world["client"], long_world["episode"]
    res = c.get(f"/api/episodes/{ep.id}/rewards", params={"buckets": 100})
    assert res.status_code == 200, res.text
    body = res.json()
    rewards = [LongEnv.reward(t, LONG_STEPS) for t in range(LONG_STEPS - 1)] + [0.0]
    assert body["total"] == LONG_STEPS and body["return"] == sum(rewards)
    points = dict(body["reward"])
    assert len(points) <= 4 * 100
    spikes = [t for t, r in enumerate(rewards) if r != 1.0]
    assert all(points.get(t) == rewards[t] for t in spikes), "a spike was lost"
    steps = [t for t, _ in body["cumulative"]]
    assert steps == sorted(steps) and body["cumulative"][-1] == [LONG_STEPS - 1, sum(rewards)]
    full = c.get(f"/api/episodes/{ep.id}/rewards", params={"buckets": 4000}).json()
    assert full["return"] == body["return"]
    assert c.get(f"/api/episodes/{ep.id}/rewards", params={"buckets": 0}).status_code == 422


def test_sort_by_each_column_and_return_range(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [
        ins.add(study, cp[0], participant="b-worker", minutes_ago=3),
        ins.add(study, cp[1], participant="a-worker", minutes_ago=2, status="rejected"),
        ins.add(study, cp[2], participant=None, user=owner, minutes_ago=1),
    ]
    c = factory.client(owner)
    url = f"/api/studies/{study.id}/episodes"

    def ids(**params):  # type: ignore[no-untyped-def]
        res = c.get(url, params={"include_tests": "true", **params})  # eps[2] is a test play
        assert res.status_code == 200, res.text
        return [e["id"] for e in res.json()["items"]]

    by_return = sorted(eps, key=lambda e: (e.total_reward, e.id))
    assert ids(sort="total_reward") == [e.id for e in by_return]
    assert ids(sort="participant") == [eps[2].id, eps[1].id, eps[0].id]  # test play first
    assert ids(sort="-participant") == [eps[0].id, eps[1].id, eps[2].id]
    assert ids(sort="status") == [eps[0].id, eps[2].id, eps[1].id]
    assert ids(sort="-steps")[0] == eps[1].id
    lo, hi = by_return[1].total_reward, by_return[2].total_reward
    assert ids(min_return=lo, sort="total_reward") == [e.id for e in by_return[1:]]
    assert set(ids(max_return=lo)) == {by_return[0].id, by_return[1].id}
    assert ids(min_return=lo, max_return=lo) == [by_return[1].id]
    assert ids(min_return=hi + 1) == []
    assert c.get(url, params={"min_return": "nan"}).status_code == 422


def test_episode_video_is_what_the_player_saw_at_the_recorded_times(  # type: ignore[no-untyped-def]
    world_short, recorded, tmp_path
) -> None:
    from server.export.video import PLAYABLE_PSNR_DB, decode_jpeg, psnr, read_video

    c, ep = world_short
    rec = recorded["cartpole"][0]
    res = c.get(f"/api/episodes/{ep.id}/video.mp4")
    assert res.status_code == 200, res.text
    assert res.headers["content-type"] == "video/mp4"
    assert f"episode-{ep.id}.mp4" in res.headers["content-disposition"]
    (tmp_path / "v.mp4").write_bytes(res.content)
    frames, times = read_video(tmp_path / "v.mp4")
    assert len(frames) == rec.num_steps
    applied = [t["applied"] for t in rec.timings]
    assert times == pytest.approx([(a - applied[0]) / 1000 for a in applied], abs=1e-6)
    worst = min(psnr(f, decode_jpeg(j)) for f, j in zip(frames, rec.frames, strict=True))
    assert worst >= PLAYABLE_PSNR_DB, worst
    assert c.get("/api/episodes/nope/video.mp4").status_code == 404


def test_episode_video_is_made_once_and_goes_with_the_episode(world_short) -> None:  # type: ignore[no-untyped-def]
    c, ep = world_short
    log = Path(ep.storage_path)
    assert episode_videos(log) == []
    first = c.get(f"/api/episodes/{ep.id}/video.mp4")
    assert first.status_code == 200, first.text
    (kept,) = episode_videos(log)
    assert kept.read_bytes() == first.content
    made = kept.stat()
    again = c.get(f"/api/episodes/{ep.id}/video.mp4")
    assert again.content == first.content
    (still,) = episode_videos(log)
    assert (still, still.stat().st_ino, still.stat().st_mtime_ns) == (
        kept,
        made.st_ino,
        made.st_mtime_ns,
    )  # served as kept, not made again
    assert not [p for p in log.parent.iterdir() if p.name.startswith(".")]  # no partial left

    # The log changing (a late finalize) makes a new video and drops the old one.
    extra = log / "late.bin"
    extra.write_bytes(b"x")
    assert c.get(f"/api/episodes/{ep.id}/video.mp4").status_code == 200
    (newer,) = episode_videos(log)
    assert newer != kept and not kept.exists()

    # Deleting the episode deletes its video with its log.
    body = {"selection": {"episode_ids": [ep.id]}, "action": "delete"}
    res = c.post(f"/api/studies/{ep.study_id}/episodes/bulk", json=body)
    assert res.status_code == 200, res.text
    assert not log.exists() and episode_videos(log) == []


def test_four_first_requests_make_one_video(world_short, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Single flight: simultaneous first requests wait for one encode, then share it."""
    import threading

    from server.services.jobs import episode_videos as videos

    c, ep = world_short
    made: list[Path] = []
    real = videos.video_of_log

    def counted(log_dir: Path, path: Path, max_steps: int | None = None) -> Path:
        made.append(path)
        return real(log_dir, path, max_steps)

    monkeypatch.setattr(videos, "video_of_log", counted)
    answers: list[bytes] = []
    start = threading.Barrier(4)

    def ask() -> None:
        start.wait()
        res = c.get(f"/api/episodes/{ep.id}/video.mp4")
        assert res.status_code == 200, res.text
        answers.append(res.content)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(made) == 1 and len(answers) == 4 and len(set(answers)) == 1


def test_a_video_past_the_operators_length_limit_is_422(settings, db, recorded) -> None:  # type: ignore[no-untyped-def]
    from server.main import create_app
    from tests.factories import Factory

    rec = recorded["cartpole"][0]
    short = Factory(db, create_app(settings.model_copy(update={"video_max_steps": 3})))
    owner = short.user()
    ep = Inserter(db, settings.data_root).add(short.study(owner, two_env_spec()), rec)
    res = short.client(owner).get(f"/api/episodes/{ep.id}/video.mp4")
    assert res.status_code == 422, res.text
    assert "video limit of 3 steps" in res.json()["detail"][0]["msg"]
    assert episode_videos(Path(ep.storage_path)) == []
    short.close()


def test_a_video_is_made_from_the_log_step_by_step(recorded, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The streamed encode writes what the in-memory one (the exports' videos) writes."""
    from server.export.episode import read_episode
    from server.export.episode_video import episode_video, video_of_log
    from server.export.video import read_video

    log = recorded["cartpole"][0].log_dir
    streamed, _ = read_video(video_of_log(log, tmp_path / "streamed.mp4"))
    whole, _ = read_video(episode_video(read_episode(log), tmp_path / "whole.mp4"))
    assert len(streamed) == len(whole)
    assert all(np.array_equal(a, b) for a, b in zip(streamed, whole, strict=True))
