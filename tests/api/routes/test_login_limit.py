"""Failed logins are limited per (account, client address) and per client address, with
growing delays before the limit (429 with Retry-After); strangers cannot lock an owner out."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from server.core.config import Settings
from server.main import create_app
from server.models import Role
from tests.factories import PASSWORD


class Clock:
    """The limiters' clock, moved by hand: a test never sleeps through a delay."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def from_address(app, clock) -> Iterator:  # type: ignore[no-untyped-def]
    """Clients of the test app connecting from a given peer address."""
    made: list[TestClient] = []

    def make(host: str, app=app) -> TestClient:  # type: ignore[no-untyped-def]
        app.state.login_limiter._clock = clock
        client = TestClient(app, client=(host, 40000))
        client.__enter__()
        made.append(client)
        return client

    yield make
    for client in made:
        client.__exit__(None, None, None)


def login(client: TestClient, email: str, password: str, **headers: str):  # type: ignore[no-untyped-def]
    res = client.post(
        "/api/auth/login", json={"email": email, "password": password}, headers=headers
    )
    # past the growing delays (at most 2 s for these counts), well inside the window
    client.app.state.login_limiter._clock.now += 10
    return res


def test_five_failures_lock_the_account_from_that_address_only(factory, from_address):
    user, other = factory.user(), factory.user()
    client = from_address("10.0.0.1")
    for _ in range(5):
        assert login(client, user.email, "wrong password").status_code == 401
    res = login(client, user.email.upper(), PASSWORD)  # the same account, spelled otherwise
    assert res.status_code == 429, res.text
    assert 0 < int(res.headers["Retry-After"]) <= 900
    assert res.headers["content-type"].startswith("application/json")
    assert "Too many failed logins" in res.json()["detail"]
    # the owner from another address logs in: a stranger cannot lock the account
    assert login(from_address("10.0.0.2"), user.email, PASSWORD).status_code == 200
    # another account from the same address still logs in
    assert login(client, other.email, PASSWORD).status_code == 200


def test_delays_grow_before_the_limit(factory, from_address, clock):
    user = factory.user()
    client = from_address("10.0.0.1")
    for _ in range(3):
        assert login(client, user.email, "wrong password").status_code == 401
    clock.now -= 10  # back to just after the third failure: half the limit is past
    res = client.post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
    assert res.status_code == 429 and res.headers["Retry-After"] == "1", res.text
    clock.now += 1
    assert login(client, user.email, PASSWORD).status_code == 200


def test_an_address_failing_100_times_cannot_stop_the_owner(settings, factory, from_address):
    owner = factory.user()
    attacker = from_address("203.0.113.9")
    for _ in range(100):
        assert login(attacker, owner.email, "guess").status_code in (401, 429)
    assert login(attacker, owner.email, PASSWORD).status_code == 429
    assert login(from_address("198.51.100.1"), owner.email, PASSWORD).status_code == 200


def test_admins_see_and_clear_login_limits(factory, from_address):
    admin = factory.user(Role.admin)
    user = factory.user()
    attacker = from_address("10.0.0.7")
    for _ in range(5):
        login(attacker, user.email, "wrong")
    api = factory.client(admin)
    assert factory.client(user).get("/api/users/login-limits").status_code == 403
    limits = api.get("/api/users/login-limits").json()
    pair = next(item for item in limits if item["kind"] == "account_address")
    assert (pair["account"], pair["address"], pair["failures"]) == (user.email, "10.0.0.7", 5)
    assert pair["retry_after_s"] > 0
    assert api.delete("/api/users/login-limits", params={"key": pair["key"]}).status_code == 204
    assert login(attacker, user.email, PASSWORD).status_code == 200
    assert api.delete("/api/users/login-limits").status_code == 204
    assert api.get("/api/users/login-limits").json() == []


def test_replicas_share_the_counts(settings, factory, from_address):
    """Two apps on one database, as two replicas behind a load balancer: one limit in all."""
    user, other = factory.user(), factory.user()
    limits = settings.model_copy(
        update={"login_max_failures": 3, "login_max_failures_per_address": 4}
    )
    one, two = create_app(limits), create_app(limits)
    a1, a2 = from_address("10.0.0.1", app=one), from_address("10.0.0.1", app=two)
    for client in (a1, a2, a1):
        assert login(client, user.email, "wrong password").status_code == 401
    for client in (a1, a2):
        assert login(client, user.email, PASSWORD).status_code == 429
    assert login(from_address("10.0.0.5", app=one), user.email, PASSWORD).status_code == 200
    b1, b2 = from_address("10.0.0.2", app=one), from_address("10.0.0.2", app=two)
    for n, client in enumerate((b1, b2, b1, b2)):
        assert login(client, f"nobody{n}@example.com", "wrong").status_code == 401
    assert login(b1, other.email, PASSWORD).status_code == 429
    assert login(from_address("10.0.0.3", app=two), other.email, PASSWORD).status_code == 200


def test_a_success_resets_the_count_of_the_account_from_that_address(factory, from_address):
    user = factory.user()
    client = from_address("10.0.0.1")
    for _ in range(2):
        for _ in range(4):
            assert login(client, user.email, "wrong password").status_code == 401
        assert login(client, user.email, PASSWORD).status_code == 200


def test_failures_from_one_address_lock_that_address(settings, factory, from_address):
    user = factory.user()
    app = create_app(settings.model_copy(update={"login_max_failures_per_address": 3}))
    spray = from_address("10.0.0.1", app=app)
    for n in range(3):
        assert login(spray, f"nobody{n}@example.com", "wrong password").status_code == 401
    limited = login(spray, user.email, PASSWORD)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    assert login(from_address("10.0.0.2", app=app), user.email, PASSWORD).status_code == 200


def test_x_forwarded_for_is_ignored_unless_the_proxy_is_trusted(settings, factory, from_address):
    user = factory.user()
    three = settings.model_copy(update={"login_max_failures_per_address": 3})
    client = from_address("10.0.0.1", app=create_app(three))
    for n in range(3):
        res = login(client, f"x{n}@example.com", "wrong", **{"X-Forwarded-For": f"192.0.2.{n}"})
        assert res.status_code == 401
    res = login(client, user.email, PASSWORD, **{"X-Forwarded-For": "192.0.2.99"})
    assert res.status_code == 429

    proxied = create_app(three.model_copy(update={"trusted_proxies": "10.0.0.9, 10.1.0.0/16"}))
    proxy = from_address("10.0.0.9", app=proxied)
    for n in range(3):
        res = login(proxy, f"y{n}@example.com", "wrong", **{"X-Forwarded-For": "198.51.100.7"})
        assert res.status_code == 401
    blocked = login(proxy, user.email, PASSWORD, **{"X-Forwarded-For": "198.51.100.7"})
    assert blocked.status_code == 429
    # another client behind the same proxy is another address
    res = login(proxy, user.email, PASSWORD, **{"X-Forwarded-For": "198.51.100.8, 10.1.2.3"})
    assert res.status_code == 200


def test_the_limits_are_settings(settings, factory, from_address):
    defaults = Settings(data_root=settings.data_root, _env_file=None)
    assert defaults.login_max_failures == 5
    assert defaults.login_max_failures_per_address == 20
    assert defaults.login_window_s == 15 * 60
    assert defaults.trusted_proxies == ""
    user = factory.user()
    strict = create_app(settings.model_copy(update={"login_max_failures": 2}))
    client = from_address("10.0.0.1", app=strict)
    for _ in range(2):
        assert login(client, user.email, "wrong password").status_code == 401
    assert login(client, user.email, PASSWORD).status_code == 429
