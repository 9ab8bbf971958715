"""Quality signals of real recorded episodes (finalization, crash recovery, backfill), and the
list's quality and length filters, sorts, badges, keyset cursors and capped count."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from server.models import Episode, EpisodeStatus, StudyEnvironment
from server.principal import Principal
from server.recording import signals
from server.recording.format import episode_dir
from server.schemas.exports import ExportSelection
from server.services.crowd import episodes
from server.services.exports import selection as export_selection
from server.services.live import replicas
from server.services.review import quality, review
from tests.api.routes.recorded import Inserter, two_env_spec
from tests.api.routes.test_episodes_bulk import run
from tests.export.recordings import Recording, record_episode
from tests.factories import run_cli

STEPS = 13  # timesteps of the idle recording: 12 actions (MountainCar never ends sooner)


def _idle_input(t: int, action: Any) -> dict[str, Any]:
    """Nothing held on every third action; otherwise the arrow of the action."""
    if t % 3 == 0:
        return {"keys": [], "buttons": {}, "axes": []}
    return {"keys": ["ArrowRight" if int(action) else "ArrowLeft"], "buttons": {}, "axes": []}


@pytest.fixture(scope="module")
def idle_rec(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """A real MountainCar log whose inputs hold nothing on a third of its actions."""
    root = tmp_path_factory.mktemp("idle")
    make = lambda: gym.make(  # noqa: E731
        "MountainCar-v0", render_mode="rgb_array", max_episode_steps=STEPS - 1
    )
    episode_id = "idle0".ljust(32, "0")
    return record_episode(
        make, root / episode_id, env_id="MountainCar-v0", episode_id=episode_id, seed=11,
        raw_input=_idle_input,
    )  # fmt: skip


def expected(rec: Recording, duration_s: float) -> dict[str, float]:
    """The signals worked out from what was fed to envlogger (not from the log)."""
    held = [set(raw["keys"]) for raw in rec.inputs]
    presses, before = 0, set[str]()
    for keys in held:
        presses += len(keys - before)
        before = keys
    # the input of a_t rides with timestep t+1; its frame's ack with timestep t+2 (so the
    # last action's latency is not in the log)
    lat = [rec.frame_times[k][1] - rec.timings[k]["input_sent"] for k in range(1, STEPS - 1)]
    return {
        "idle_share": sum(not k for k in held) / len(held),
        "inputs_per_s": presses / duration_s,
        "latency_p50_ms": signals.percentile(lat, 50),  # type: ignore[dict-item]
        "latency_p99_ms": signals.percentile(lat, 99),  # type: ignore[dict-item]
    }


def test_backfill_computes_signals_from_the_log(factory, db, settings, idle_rec) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    row = Inserter(db, settings.data_root).add(study, idle_rec)
    c = factory.client(owner)
    url = f"/api/studies/{study.id}/episodes"
    before = c.get(url).json()["items"][0]
    assert before["quality_computed"] is False
    assert before["idle_share"] is None and before["latency_p99_ms"] is None
    assert quality.backfill(db, study.id) == 1
    assert quality.backfill(db, study.id) == 0  # computed ones are left alone
    item = c.get(url).json()["items"][0]
    want = expected(idle_rec, row.duration_s or 0.0)
    assert item["quality_computed"] is True
    assert idle_rec.num_steps == STEPS and want["idle_share"] == pytest.approx(4 / 12)
    for key, value in want.items():
        assert item[key] == pytest.approx(value), key
    assert item["length_ratio"] == 1.0  # the environment's only completed episode
    assert {b["flag"] for b in item["badges"]} == set()  # a third idle: under the badge's half


def test_cli_quality_command(factory, db, settings, idle_rec) -> None:  # type: ignore[no-untyped-def]
    study = factory.study(factory.user(), two_env_spec())
    Inserter(db, settings.data_root).add(study, idle_rec)
    proc = run_cli(settings, "quality", "--study", str(study.id))
    assert proc.returncode == 0, proc.stderr
    assert "computed the quality signals of 1 episode(s)" in proc.stdout
    db.expire_all()
    row = db.get(Episode, idle_rec.episode_id)
    assert row is not None and row.quality_at is not None and row.idle_share is not None


def _recording_row(db, settings, study, rec: Recording) -> Episode:  # type: ignore[no-untyped-def]
    """A ``recording`` episode as the player creates it, its log where the worker writes."""
    who = Principal.for_user(study.owner_id, "designer")
    sid = episodes.start_session(db, study.id, who)
    row = episodes.create_episode(
        db, study_id=study.id, env_key="cartpole", session_id=sid, principal=who, seed=rec.seed,
        data_root=settings.data_root,
    )  # fmt: skip
    shutil.copytree(rec.log_dir, Path(row.storage_path))
    return row


def test_finish_episode_computes_signals_and_the_median(factory, db, settings, idle_rec) -> None:  # type: ignore[no-untyped-def]
    study = factory.study(factory.user(), two_env_spec())
    row = _recording_row(db, settings, study, idle_rec)
    live = [float(v) for v in range(10, 210, 10)]  # what the session measured
    counts = signals.InputCounts()  # what the session counted, action by action
    for raw in idle_rec.inputs:
        counts.add(signals.held_controls(raw))
    result = episodes.EpisodeResult(
        EpisodeStatus.completed, steps=STEPS, total_reward=12.0, latencies_ms=live,
        frames_dropped=3, inputs=counts,
    )  # fmt: skip
    done = episodes.finish_episode(db, row.id, result)
    want = expected(idle_rec, done.duration_s or 0.0)
    assert done.quality_at is not None
    assert done.idle_share == pytest.approx(want["idle_share"])
    assert done.inputs_per_s == pytest.approx(want["inputs_per_s"])
    assert done.latency_p50_ms == signals.percentile(live, 50)  # measured live
    assert done.latency_p99_ms == pytest.approx(signals.percentile(live, 99))
    env = db.get(StudyEnvironment, done.study_env_id)
    assert env is not None and env.median_steps == STEPS
    badges = {b["flag"]: b["label"] for b in quality.badges(done, env.median_steps)}
    assert badges == {"slow": "p99 198 ms", "dropped": "3 dropped"}


def test_crash_recovery_computes_signals(factory, db, settings, idle_rec) -> None:  # type: ignore[no-untyped-def]
    study = factory.study(factory.user(), two_env_spec())
    row = _recording_row(db, settings, study, idle_rec)
    assert replicas.recover_at_start(db, dead_after_s=15.0, me="this-replica") == 1
    db.expire_all()
    got = db.get(Episode, row.id)
    assert got is not None and got.status == EpisodeStatus.abandoned
    want = expected(idle_rec, got.duration_s or 0.0)
    assert got.quality_at is not None and got.steps == STEPS
    assert got.idle_share == pytest.approx(want["idle_share"])
    assert got.latency_p99_ms == pytest.approx(want["latency_p99_ms"])  # from the log's acks


def test_a_missing_log_is_computed_as_nothing(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    study = factory.study(factory.user(), two_env_spec())
    row = Inserter(db, settings.data_root).add(study, recorded["cartpole"][0])
    shutil.rmtree(episode_dir(settings.data_root, study.id, row.id))
    assert quality.backfill(db, study.id) == 1
    assert row.quality_at is not None and row.idle_share is None


# --- the list's filters --------------------------------------------------------------------
SIGNALS = {  # per cartpole recording (9, 13, 7, 11, 6 steps): p50, p99, idle share
    0: (20.0, 40.0, 0.1),
    1: (60.0, 180.0, 0.8),
    2: (None, None, None),
    3: (35.0, 120.0, 0.5),
    4: (15.0, 30.0, 0.0),
}


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """Five completed CartPole episodes and a MountainCar one with set signals and medians."""
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    eps = [
        ins.add(study, rec, minutes_ago=50 - 5 * i) for i, rec in enumerate(recorded["cartpole"])
    ]
    eps.append(ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=1))
    for i, (p50, p99, idle) in SIGNALS.items():
        eps[i].latency_p50_ms, eps[i].latency_p99_ms, eps[i].idle_share = p50, p99, idle
    quality.refresh_medians(db, {e.study_env_id for e in eps})
    db.commit()
    return {"study": study, "eps": eps, "client": factory.client(owner), "owner": owner}


def _ids(res) -> list[str]:  # type: ignore[no-untyped-def]
    assert res.status_code == 200, res.text
    return [e["id"] for e in res.json()["items"]]


def test_length_range(world) -> None:  # type: ignore[no-untyped-def]
    c, url, eps = world["client"], f"/api/studies/{world['study'].id}/episodes", world["eps"]
    got = _ids(c.get(url, params={"min_steps": 8, "max_steps": 11, "sort": "steps"}))
    assert [e.steps for e in eps] == [9, 13, 7, 11, 6, 7]
    assert got == [eps[0].id, eps[3].id]  # 9 and 11 steps
    assert _ids(c.get(url, params={"max_steps": 6})) == [eps[4].id]


def test_quality_flags(world) -> None:  # type: ignore[no-untyped-def]
    c, url, eps = world["client"], f"/api/studies/{world['study'].id}/episodes", world["eps"]
    assert set(_ids(c.get(url, params={"p99_over_ms": 100}))) == {eps[1].id, eps[3].id}
    assert _ids(c.get(url, params={"idle_over": 0.6})) == [eps[1].id]
    both = {"p99_over_ms": 100, "idle_over": 0.4}
    assert set(_ids(c.get(url, params=both))) == {eps[1].id, eps[3].id}
    # cartpole median: 9 steps (of 6, 7, 9, 11, 13); mountaincar: its one episode
    assert set(_ids(c.get(url, params={"under_median": 0.8}))) == {eps[2].id, eps[4].id}
    assert _ids(c.get(url, params={"over_median": 1.4})) == [eps[1].id]
    assert _ids(c.get(url, params={"under_median": 0.8, "env": "mountaincar"})) == []
    assert _ids(c.get(url, params={"over_median": 0.99, "env": "mountaincar"})) == [eps[5].id]


def test_badges_and_quality_fields(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c, url, eps = world["client"], f"/api/studies/{world['study'].id}/episodes", world["eps"]
    monkeypatch.setattr(quality, "SHORT_RATIO", 0.7)  # 6 steps < 0.7 x the median 9
    items = {e["id"]: e for e in c.get(url).json()["items"]}
    assert items[eps[1].id]["badges"] == [
        {"flag": "idle", "label": "idle 80%"},
        {"flag": "slow", "label": "p99 180 ms"},
    ]
    assert items[eps[4].id]["badges"] == [{"flag": "short", "label": "short"}]
    assert items[eps[4].id]["length_ratio"] == pytest.approx(6 / 9)
    assert items[eps[2].id]["badges"] == []  # 7 steps: not under 0.7 x 9
    assert items[eps[0].id]["badges"] == [] and items[eps[0].id]["latency_p99_ms"] == 40.0
    detail = c.get(f"/api/episodes/{eps[1].id}").json()
    assert [b["flag"] for b in detail["badges"]] == ["idle", "slow"]


def test_sort_by_latency_p50_puts_unmeasured_last_ascending(world) -> None:  # type: ignore[no-untyped-def]
    c, url, eps = world["client"], f"/api/studies/{world['study'].id}/episodes", world["eps"]
    env = {"env": "cartpole"}
    asc = _ids(c.get(url, params={**env, "sort": "latency_p50_ms"}))
    assert asc == [eps[4].id, eps[0].id, eps[3].id, eps[1].id, eps[2].id]
    desc = _ids(c.get(url, params={**env, "sort": "-latency_p50_ms"}))
    assert desc == asc[::-1]
    for key in ("latency_p99_ms", "idle_share", "inputs_per_s", "frames_dropped"):
        assert c.get(url, params={"sort": f"-{key}"}).status_code == 200, key


@pytest.mark.parametrize(
    "sort", ["-started_at", "steps", "-latency_p50_ms", "latency_p50_ms", "-total_reward"]
)
def test_keyset_cursor_pages_like_offsets(world, sort: str) -> None:  # type: ignore[no-untyped-def]
    c, url = world["client"], f"/api/studies/{world['study'].id}/episodes"
    everything = _ids(c.get(url, params={"sort": sort}))
    paged: list[str] = []
    params: dict[str, Any] = {"sort": sort, "limit": 2}
    while True:
        body = c.get(url, params=params).json()
        paged += [e["id"] for e in body["items"]]
        if body["next_cursor"] is None:
            break
        params["after"] = body["next_cursor"]
    assert paged == everything and len(paged) == 6


def test_bad_cursors_are_422(world) -> None:  # type: ignore[no-untyped-def]
    c, url = world["client"], f"/api/studies/{world['study'].id}/episodes"
    cursor = c.get(url, params={"sort": "steps", "limit": 1}).json()["next_cursor"]
    for params in (
        {"sort": "-steps", "after": cursor},  # another sort's cursor
        {"sort": "steps", "after": "not-a-cursor"},
        {"sort": "participant", "after": cursor},
    ):
        res = c.get(url, params=params)
        assert res.status_code == 422, params
        assert "cursor" in res.json()["message"]


def test_count_is_capped_unless_exact(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    c, url = world["client"], f"/api/studies/{world['study'].id}/episodes"
    monkeypatch.setattr(review, "COUNT_CAP", 4)
    body = c.get(url).json()
    assert (body["total"], body["total_exact"]) == (4, False)
    body = c.get(url, params={"exact_count": "true"}).json()
    assert (body["total"], body["total_exact"]) == (6, True)
    body = c.get(url, params={"count": "false", "limit": 2}).json()
    assert body["total"] is None and len(body["items"]) == 2 and body["next_cursor"]
    assert body["tag_names"] == []
    body = c.get(url, params={"env": "cartpole", "max_steps": 9}).json()
    assert (body["total"], body["total_exact"]) == (3, True)


@pytest.mark.parametrize(
    "query",
    ["idle_over=1.5", "idle_over=-0.1", "under_median=0", "over_median=-1", "min_steps=-1",
     "p99_over_ms=nan", "max_steps=99999999999", "after=" + "x" * 401],
)  # fmt: skip
def test_bad_filter_values_are_422(world, query: str) -> None:  # type: ignore[no-untyped-def]
    res = world["client"].get(f"/api/studies/{world['study'].id}/episodes?{query}")
    assert res.status_code == 422, res.text


def test_bulk_and_export_take_the_same_filter(world, db) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = world["client"], world["study"].id, world["eps"]
    url = f"/api/studies/{sid}/episodes/bulk"
    body = {"action": "add_tags", "tags": ["laggy"], "selection": {"filter": {"p99_over_ms": 100}}}
    assert run(c, url, body, inline=False)["changed"] == 2  # a filter: a background job
    assert set(_ids(c.get(f"/api/studies/{sid}/episodes", params={"tag": "laggy"}))) == {
        eps[1].id, eps[3].id}  # fmt: skip
    short = {
        "action": "add_tags",
        "tags": ["short"],
        "selection": {"filter": {"under_median": 0.8}},
    }
    assert run(c, url, short, inline=False)["changed"] == 2
    selection = ExportSelection(idle_over=0.4, min_steps=9)
    long = export_selection.resolve(db, world["study"], ExportSelection(over_median=1.4))
    assert [e.id for e in long] == [eps[1].id]
    assert [e.id for e in export_selection.resolve(db, world["study"], selection)] == [
        eps[1].id,
        eps[3].id,
    ]
    bad = {"action": "delete", "selection": {"filter": {"under_median": 0}}}
    assert c.post(f"/api/studies/{sid}/episodes/bulk", json=bad).status_code == 422


def test_bulk_delete_refreshes_the_median(world, db) -> None:  # type: ignore[no-untyped-def]
    c, sid, eps = world["client"], world["study"].id, world["eps"]
    body = {"action": "delete", "selection": {"episode_ids": [eps[1].id, eps[3].id]}}
    assert c.post(f"/api/studies/{sid}/episodes/bulk", json=body).status_code == 200
    db.expire_all()
    env = db.get(StudyEnvironment, eps[0].study_env_id)
    assert env is not None and env.median_steps == 7.0  # of 6, 7, 9
