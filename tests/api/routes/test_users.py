"""The users API: the last active admin stays an active admin."""

from __future__ import annotations

import pytest

from server.models import Role, User

LAST_ADMIN = "the only active admin"


@pytest.mark.parametrize("change", [{"role": "designer"}, {"is_active": False}])
def test_the_only_admin_cannot_demote_or_deactivate_itself(factory, db, change):
    admin = factory.user(Role.admin)
    client = factory.client(admin)
    res = client.patch(f"/api/users/{admin.id}", json=change)
    assert res.status_code == 409, res.text
    assert LAST_ADMIN in res.json()["detail"]
    db.expire_all()
    row = db.get(User, admin.id)
    assert row is not None and row.role == Role.admin and row.is_active
    assert client.get("/api/auth/me").status_code == 200  # the session was kept


def test_an_inactive_admin_does_not_count(factory, db):
    admin = factory.user(Role.admin)
    other = factory.user(Role.admin)
    other.is_active = False
    db.commit()
    client = factory.client(admin)
    res = client.patch(f"/api/users/{admin.id}", json={"role": "designer"})
    assert res.status_code == 409 and LAST_ADMIN in res.json()["detail"]


def test_an_admin_can_step_down_while_another_stays(factory, db):
    first = factory.user(Role.admin)
    second = factory.user(Role.admin)
    client = factory.client(first)
    assert client.patch(f"/api/users/{second.id}", json={"is_active": False}).status_code == 200
    # second is inactive now: first is the last active admin and cannot leave
    assert client.patch(f"/api/users/{first.id}", json={"role": "designer"}).status_code == 409
    assert client.patch(f"/api/users/{second.id}", json={"is_active": True}).status_code == 200
    assert client.patch(f"/api/users/{first.id}", json={"role": "designer"}).status_code == 200
    db.expire_all()
    assert db.get(User, first.id).role == Role.designer  # type: ignore[union-attr]


def test_renaming_the_only_admin_is_fine(factory):
    admin = factory.user(Role.admin)
    client = factory.client(admin)
    res = client.patch(f"/api/users/{admin.id}", json={"name": "Boss", "role": "admin"})
    assert res.status_code == 200 and res.json()["name"] == "Boss"
