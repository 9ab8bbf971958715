"""The background budget: bounded slots, a bounded queue, players first, and an app that
keeps answering while 30 validations ask for workers at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil
import pytest

from server.core import security
from server.core.budget import ProcessBudget
from server.core.config import Settings
from server.errors import Busy
from tests.factories import PASSWORD

MAX_BACKGROUND = 2


def test_slots_are_bounded_and_queue_is_bounded() -> None:
    budget = ProcessBudget(max_workers=8, max_background=2, queue=1, wait_s=30)
    with budget.slots(5) as held:
        assert held == 2  # never more than the background limit
        waited: list[int] = []

        def waiter() -> None:
            with budget.slots(1) as n:
                waited.append(n)

        thread = threading.Thread(target=waiter)
        thread.start()
        while budget.waiting == 0:
            time.sleep(0.01)
        with pytest.raises(Busy) as refused:  # the queue (1) is full: refused at once
            with budget.slots(1):
                pass
        assert refused.value.retry_after >= 1 and "try again" in refused.value.message
    thread.join(timeout=10)
    assert waited == [1] and budget.in_use == 0 and budget.peak == 2


def test_players_keep_priority() -> None:
    players = [3]
    budget = ProcessBudget(
        max_workers=4, max_background=2, queue=0, wait_s=0, players=lambda: players[0]
    )
    with budget.slots(2) as held:
        assert held == 1  # asks for two, gets the one the players leave
    players[0] = 4
    with pytest.raises(Busy), budget.slots(1):
        pass
    players[0] = 3
    with budget.slots(1):
        pass


def test_a_job_runner_takes_a_slot_without_waiting() -> None:
    players = [0]
    budget = ProcessBudget(
        max_workers=3, max_background=2, queue=4, wait_s=30, players=lambda: players[0]
    )
    assert budget.try_take() and budget.try_take()
    assert not budget.try_take()  # the background limit
    budget.give_back(2)
    players[0] = 3
    assert not budget.try_take()  # players first
    assert budget.in_use == 0


def test_a_waiter_times_out_with_503() -> None:
    budget = ProcessBudget(max_workers=1, max_background=1, queue=4, wait_s=0.2)
    with budget.slots(1), pytest.raises(Busy), budget.slots(1):
        pass


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "max_workers": 4,
            "max_background_workers": MAX_BACKGROUND,
            "background_queue": 6,
            "background_wait_s": 120.0,
        }
    )


def _spec(i: int) -> dict:
    # a distinct delay per environment: nothing is served from the validation cache
    envs = [
        {
            "id": f"e{j}",
            "name": f"E{j}",
            "source": {
                "kind": "dm_env",
                "factory": "tests.runtime.fake_envs:slow_start",
                "kwargs": {"delay": 0.3 + i / 1000 + j / 10_000},
            },
            "controls": {"keys": {"KeyA": 1, "KeyB": 2}, "noop": 0},
        }
        for j in range(3)
    ]
    return {"name": f"Budget {i}", "environments": envs}


def _workers(baseline: set[int]) -> int:
    return sum(1 for p in psutil.Process().children(recursive=True) if p.pid not in baseline)


def test_30_concurrent_validations_stay_within_the_budget(live_server, factory, app):
    user = factory.user()
    with httpx.Client(base_url=live_server, timeout=300) as client:
        login = client.post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
        assert login.status_code == 200, login.text
        client.headers[security.CSRF_HEADER] = login.json()["csrf_token"]
        # one validation first: the worker start machinery (forkserver) is up, then counted out
        first = client.post("/api/studies/validate", json={"spec": _spec(-1)})
        assert first.status_code == 200, first.text
        assert first.json()["ok"], first.text
        time.sleep(0.5)
        baseline = {p.pid for p in psutil.Process().children(recursive=True)}

        done = threading.Event()
        seen: list[int] = []
        health: list[int] = []

        def sample() -> None:
            with httpx.Client(base_url=live_server, timeout=60) as probe:
                while not done.is_set():
                    seen.append(_workers(baseline))
                    health.append(probe.get("/api/health").status_code)
                    time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            with ThreadPoolExecutor(30) as pool:
                answers = list(
                    pool.map(
                        lambda i: client.post("/api/studies/validate", json={"spec": _spec(i)}),
                        range(30),
                    )
                )
        finally:
            done.set()
            sampler.join(timeout=60)

    codes = [res.status_code for res in answers]
    assert set(codes) <= {200, 503}, codes
    assert codes.count(200) >= MAX_BACKGROUND + 1  # some ran, some waited and then ran
    for res in answers:
        if res.status_code == 503:
            assert int(res.headers["Retry-After"]) >= 1
            assert res.json()["code"] == "busy" and "try again" in res.json()["detail"]
        else:
            assert res.json()["ok"], res.text
    assert max(seen) <= MAX_BACKGROUND, seen
    assert max(seen) >= 1  # the sampler saw workers at all
    assert app.state.budget.peak <= MAX_BACKGROUND
    assert len(health) >= 10 and set(health) == {200}, health
