"""Login, logout, session cookie and the uniform wrong-password answer."""

from __future__ import annotations

import pytest

from server.core import security
from server.models import AuthSession, Role
from tests.factories import PASSWORD


def test_login_sets_http_only_session_and_readable_csrf_cookie(factory):
    user = factory.user()
    client = factory.client()
    res = client.post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
    assert res.status_code == 200
    cookies = res.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith(security.SESSION_COOKIE))
    csrf = next(c for c in cookies if c.startswith(security.CSRF_COOKIE))
    assert "HttpOnly" in session and "SameSite=lax" in session
    assert "HttpOnly" not in csrf
    assert res.json()["csrf_token"] == client.cookies[security.CSRF_COOKIE]
    assert client.get("/api/auth/me").json()["email"] == user.email


def test_email_is_case_insensitive(factory):
    user = factory.user(email="Mixed@Example.com".lower())
    res = factory.client().post(
        "/api/auth/login", json={"email": "MIXED@example.COM", "password": PASSWORD}
    )
    assert res.status_code == 200
    assert res.json()["user"]["id"] == user.id


def test_wrong_password_and_unknown_email_get_the_same_401(factory):
    user = factory.user()
    client = factory.client()
    wrong = client.post("/api/auth/login", json={"email": user.email, "password": "nope"})
    unknown = client.post("/api/auth/login", json={"email": "who@x.org", "password": "nope"})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json() == {"detail": "Wrong email or password."}
    assert security.SESSION_COOKIE not in client.cookies


def test_deactivated_user_cannot_log_in(factory, db):
    user = factory.user()
    user.is_active = False
    db.commit()
    res = factory.client().post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
    assert res.status_code == 401


def test_logout_ends_the_session(factory, db):
    client = factory.client(factory.user())
    assert client.post("/api/auth/logout").status_code == 204
    assert client.get("/api/auth/me").status_code == 401
    db.expire_all()
    assert db.query(AuthSession).count() == 0


def test_forged_cookie_is_anonymous(factory):
    client = factory.client()
    client.cookies.set(security.SESSION_COOKIE, "forged")
    assert client.get("/api/auth/me").status_code == 401


def test_login_body_is_validated(client):
    res = client.post("/api/auth/login", json={"email": "a@b.c"})
    assert res.status_code == 422
    assert ["body", "password"] in [e["loc"] for e in res.json()["detail"]]


def test_verify_password_costs_a_verification_for_unknown_users():
    assert security.verify_password("x", None) is False
    assert security.verify_password("pw", security.hash_password("pw")) is True


# --- users (admins only) ------------------------------------------------------------------
def test_admin_manages_users_and_designers_cannot(factory):
    admin = factory.client(factory.user(Role.admin))
    designer = factory.client(factory.user())
    body = {"email": "new@example.com", "password": "long enough pass", "role": "designer"}
    assert designer.post("/api/users", json=body).status_code == 403
    assert factory.client().post("/api/users", json=body).status_code == 401
    created = admin.post("/api/users", json=body)
    assert created.status_code == 201
    assert admin.post("/api/users", json=body).status_code == 409
    uid = created.json()["id"]
    assert admin.patch(f"/api/users/{uid}", json={"is_active": False}).json()["is_active"] is False
    assert {u["email"] for u in admin.get("/api/users").json()} >= {"new@example.com"}
    assert admin.patch("/api/users/424242", json={"name": "x"}).status_code == 404


@pytest.mark.parametrize(
    ("password", "says"),
    [
        ("short", "at least 12 characters"),
        ("12345678", "at least 12 characters"),
        ("password", "at least 12 characters"),
        (" " * 8, "at least 12 characters"),
        (" " * 12, "easy to guess"),
        ("password1234", "common"),
        ("qwertyuiop12", "common"),
        ("new.person.1", "easy to guess"),  # the account's own email
    ],
)
def test_short_or_common_password_is_refused_with_a_clear_422(factory, password, says):
    admin = factory.client(factory.user(Role.admin))
    res = admin.post("/api/users", json={"email": "new.person@b.org", "password": password})
    assert res.status_code == 422, res.text
    problems = [e for e in res.json()["detail"] if e["loc"] == ["body", "password"]]
    assert problems and says in problems[0]["msg"], res.json()
    assert admin.get("/api/users").json()[-1]["email"] != "new.person@b.org"


def test_password_change_follows_the_same_rule(factory):
    admin = factory.client(factory.user(Role.admin))
    user = factory.user()
    weak = admin.patch(f"/api/users/{user.id}", json={"password": "password1234"})
    assert weak.status_code == 422 and "common" in weak.json()["message"]
    strong = admin.patch(f"/api/users/{user.id}", json={"password": "violet kettle orbit"})
    assert strong.status_code == 200


def test_nul_in_login_is_422_not_a_database_error(client) -> None:  # type: ignore[no-untyped-def]
    """Found by tests/test_api_fuzz.py: PostgreSQL refuses NUL in text (it was a 500)."""
    res = client.post("/api/auth/login", json={"email": "a\x00@b.c", "password": "x"})
    assert res.status_code == 422, res.text
    assert "NUL" in res.json()["detail"][0]["msg"]


@pytest.mark.parametrize(("insecure", "secure"), [(False, True), (True, False)])
def test_production_cookies_are_secure_unless_the_operator_chooses_otherwise(
    settings, db, insecure, secure
):
    """STUDIO_INSECURE_COOKIES is the documented choice for plain http:// on a LAN; the
    answer says which it is, so the login page can explain a refused cookie."""
    from server.main import create_app
    from tests.factories import Factory

    production = settings.model_copy(
        update={"environment": "production", "insecure_cookies": insecure}
    )
    made = Factory(db, create_app(production))
    user = made.user()
    res = made.client().post("/api/auth/login", json={"email": user.email, "password": PASSWORD})
    assert res.status_code == 200, res.text
    assert res.json()["secure_cookies"] is secure
    for cookie in res.headers.get_list("set-cookie"):
        assert ("; Secure" in cookie or "; secure" in cookie) is secure, cookie
    made.close()
