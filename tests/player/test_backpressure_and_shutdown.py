"""A slow client never slows or loses recording; app shutdown closes live sessions."""

from __future__ import annotations

import asyncio
import multiprocessing

from fastapi.testclient import TestClient

from server.models import EpisodeStatus
from server.player import protocol as p
from server.player.handlers import dispatch
from server.player.outbox import Outbox
from server.player.session import LiveSession, Phase, SessionContext
from server.principal import Principal
from server.recording.writer import open_reader
from server.services.crowd import episodes
from server.services.studies.studies import spec_of
from tests.player.conftest import Player, counter_env, row_of, spec


def test_a_client_that_never_reads_loses_frames_not_steps(factory, designer, db, app):
    study = factory.study(designer, spec(counter_env(episode_len=100_000, mode="async", fps=60)))
    who = Principal.for_user(designer.id, designer.role)

    async def scenario():
        live = LiveSession(episodes.start_session(db, study.id, who), SessionContext(
            study_id=study.id, spec=spec_of(study), principal=who, settings=app.state.settings,
            db=app.state.sessionmaker, on_closed=lambda _: None,
            workers_in_use=lambda _study=None: 0,
        ))  # fmt: skip
        stuck = Outbox(max_frames=2)  # nobody drains it: the client fell behind
        await live.attach(stuck, resumed=False)
        await dispatch(live, p.StartMsg(type="start", env_id="counter"), stuck)
        await dispatch(live, p.GoMsg(type="go"), stuck)
        assert live.phase == Phase.playing
        for _ in range(3000):  # until the clock has stepped well past the two waiting frames
            if live.run is not None and live.run.step > 20:
                break
            await asyncio.sleep(0.01)
        run = live.run
        dropped, step = run.frames_dropped, run.step
        await dispatch(live, p.CancelMsg(type="cancel"), stuck)
        await live.close("done")
        return run.id, dropped, step

    episode_id, dropped, step = asyncio.run(scenario())
    row = row_of(db, episode_id)
    assert row.status == EpisodeStatus.canceled
    assert step > 10 and dropped >= step - 3  # all but the two waiting frames were dropped
    assert row.frames_dropped >= dropped
    with open_reader(row.storage_path) as reader:
        assert len(list(reader.steps)) == row.steps >= step + 1  # every step was recorded


def test_app_shutdown_abandons_running_episodes_and_stops_workers(factory, designer, db, app):
    study = factory.study(designer, spec(counter_env(episode_len=50)))
    client = TestClient(app)
    with client:
        from tests.factories import PASSWORD

        res = client.post("/api/auth/login", json={"email": designer.email, "password": PASSWORD})
        assert res.status_code == 200
        with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
            player = Player(ws)
            player.until("hello")
            player.send(type="start", env_id="counter")
            episode = player.until("episode_started")["episode"]
            player.frame()
            player.step(["KeyA"])
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.abandoned and row.steps == 2
    workers = [c for c in multiprocessing.active_children() if c.name.startswith("env-worker")]
    assert workers == []
