"""The designer's landing page in real Chromium: login, studies, lifecycle, users."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Role, Study, StudyState, User
from tests.factories import PASSWORD, ROOT, Factory, spec_dict

pytestmark = pytest.mark.browser

BAD_SPEC = """name: Broken
environments:
  - id: Not A Slug
    name: Broken env
    source: {kind: gymnasium}
"""


def log_in(page: Page, base: str, user: User, password: str = PASSWORD) -> None:
    """Open the landing page and log in through the form, as a person would."""
    page.goto(base + "/")
    form = page.get_by_role("form", name="Log in")
    form.get_by_label("Email").fill(user.email)
    form.get_by_label("Password").fill(password)
    form.get_by_role("button", name="Log in").click()


def activate(page: Page, verb: str = "Activate") -> None:
    """Press Activate (or Resume) and go past the pre-launch checklist's warnings, once."""
    page.get_by_role("button", name=verb, exact=True).click()
    page.get_by_role("region", name="Pre-launch checklist").get_by_role(
        "button", name=f"{verb} anyway"
    ).click()


def study_row(page: Page, name: str) -> Locator:
    return page.locator("#studies-body tr", has_text=name)


def fresh(db: Session, study_id: int) -> Study | None:
    """The study as the database holds it now (the browser wrote through the server)."""
    db.expire_all()
    return db.get(Study, study_id)


def test_wrong_password_shows_the_api_error(live_server: str, page: Page, factory: Factory):
    user = factory.user()
    log_in(page, live_server, user, password="not the password")
    expect(page).to_have_title("RLDS Studio")
    expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    expect(page.locator("#app-view")).to_be_hidden()


def test_login_shows_the_empty_state_and_survives_a_reload(
    live_server: str, page: Page, factory: Factory
):
    user = factory.user()
    log_in(page, live_server, user)
    expect(page.locator("#whoami")).to_contain_text(f"Signed in as {user.name}")
    expect(page.get_by_text("No studies yet — import a study file or create one")).to_be_visible()
    expect(page.locator("#users-section")).to_be_hidden()

    page.reload()
    expect(page.locator("#whoami")).to_contain_text(user.name)
    expect(page.locator("#studies-empty")).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.locator("#app-view")).to_be_hidden()


def test_new_study_dialog_imports_the_example_as_a_draft(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    log_in(page, live_server, user)
    page.get_by_role("button", name="New from YAML…").click()
    dialog = page.get_by_role("dialog", name="New study")
    expect(dialog.get_by_label("Study file (YAML)")).to_have_value(re.compile("CartPole-v1"))
    dialog.get_by_role("button", name="Create draft").click()

    expect(dialog).to_be_hidden()
    row = study_row(page, "My first study")
    expect(row).to_contain_text("Draft")
    expect(row).to_contain_text("CartPole")
    expect(row).to_contain_text("just now")
    expect(page.locator("#detail-name")).to_have_text("My first study")
    expect(page.locator("#spec-yaml")).to_have_value(re.compile("id: CartPole-v1"))

    studies = db.scalars(select(Study).where(Study.owner_id == user.id)).all()
    assert [(s.name, s.state) for s in studies] == [("My first study", StudyState.draft)]


def test_invalid_study_shows_the_field_paths(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    log_in(page, live_server, user)
    expect(page.locator("#studies-empty")).to_be_visible()
    page.get_by_role("button", name="New from YAML…").click()
    dialog = page.get_by_role("dialog", name="New study")
    dialog.get_by_label("Study file (YAML)").fill(BAD_SPEC)
    dialog.get_by_role("button", name="Create draft").click()

    error = dialog.get_by_role("alert")
    expect(error).to_contain_text("The study spec is not valid.")
    expect(error).to_contain_text("environments.0.id: String should match pattern")
    expect(error).to_contain_text("environments.0.source.gymnasium.id: Field required")
    expect(dialog).to_be_visible()

    dialog.get_by_label("Study file (YAML)").fill("name: [unclosed")
    dialog.get_by_role("button", name="Create draft").click()
    expect(error).to_contain_text("The study file is not valid YAML.")
    expect(error).to_contain_text("body:")
    assert db.scalars(select(Study)).all() == []


def test_import_file_picker_creates_a_draft_or_shows_the_problems(
    live_server: str, page: Page, factory: Factory, db: Session, tmp_path: Path
):
    user = factory.user()
    log_in(page, live_server, user)
    expect(page.locator("#studies-empty")).to_be_visible()
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Import file…").first.click()
    chooser.value.set_files(ROOT / "studies" / "cartpole.yaml")

    expect(study_row(page, "CartPole balance")).to_contain_text("Draft")
    assert db.scalar(select(Study.name).where(Study.owner_id == user.id)) == "CartPole balance"

    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_SPEC, encoding="utf-8")
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Import file…").first.click()
    chooser.value.set_files(bad)
    error = page.locator("#list-error")
    expect(error).to_contain_text("Could not import bad.yaml: The study spec is not valid.")
    expect(error).to_contain_text("environments.0.id:")
    expect(page.locator("#studies-body tr")).to_have_count(1)


def test_activate_shows_the_permalink_and_rotating_replaces_it(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    study = factory.study(user, spec_dict("Balance"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Balance").click()
    expect(page.get_by_role("link", name="Test-play")).to_have_attribute(
        "href", f"/player.html?study={study.id}"
    )
    expect(page.locator("#permalink")).to_be_hidden()
    expect(page.get_by_role("button", name="Pause")).to_have_count(0)

    activate(page)
    expect(page.locator("#detail-state")).to_have_text("Active")
    expect(study_row(page, "Balance")).to_contain_text("Active")
    link = page.get_by_label("Link for participants")
    expect(link).to_have_value(re.compile(r"/player\.html\?token="))
    first = fresh(db, study.id)
    assert first is not None and first.state == StudyState.active
    old_token = first.permalink_token
    expect(link).to_have_value(f"{live_server}/player.html?token={old_token}")

    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#toasts")).to_contain_text("Link copied.")

    page.get_by_role("button", name="Rotate link").click()
    page.get_by_role("dialog", name="Make a new link?").get_by_role(
        "button", name="Make a new link"
    ).click()
    expect(link).not_to_have_value(f"{live_server}/player.html?token={old_token}")
    rotated = fresh(db, study.id)
    assert rotated is not None and rotated.permalink_token != old_token
    expect(link).to_have_value(f"{live_server}/player.html?token={rotated.permalink_token}")

    page.reload()  # the open study is kept in the URL
    expect(page.locator("#detail-name")).to_have_text("Balance")
    expect(link).to_have_value(f"{live_server}/player.html?token={rotated.permalink_token}")


def test_activation_problems_are_shown(live_server: str, page: Page, factory: Factory, db: Session):
    user = factory.user()
    spec = spec_dict("Nowhere", source={"kind": "gymnasium", "id": "NoSuchEnv-v0"})
    study = factory.study(user, spec)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Nowhere").click()
    page.get_by_role("button", name="Activate").click()
    checklist = page.get_by_role("region", name="Pre-launch checklist")
    expect(checklist).to_contain_text("“Nowhere” cannot start yet")
    expect(checklist).to_contain_text("unknown Gymnasium environment id")
    expect(checklist.get_by_role("button", name="Go to CartPole · Source")).to_be_visible()
    fresh_study = fresh(db, study.id)
    assert fresh_study is not None and fresh_study.state == StudyState.draft


def test_pause_resume_and_close(live_server: str, page: Page, factory: Factory, db: Session):
    user = factory.user()
    study = factory.study(user, spec_dict("Lifecycle"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Lifecycle").click()
    lifecycle = page.locator("#lifecycle")
    activate(page)
    expect(lifecycle.get_by_role("button")).to_have_text(["Pause", "Close study"])

    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#detail-state")).to_have_text("Paused")
    expect(lifecycle.get_by_role("button")).to_have_text(["Resume", "Close study"])
    paused = fresh(db, study.id)
    assert paused is not None and paused.state == StudyState.paused

    activate(page, "Resume")
    expect(page.locator("#detail-state")).to_have_text("Active")

    page.get_by_role("button", name="Close study").click()
    confirm = page.get_by_role("dialog", name="Close this study?")
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_be_hidden()
    expect(page.locator("#detail-state")).to_have_text("Active")

    page.get_by_role("button", name="Close study").click()
    confirm.get_by_role("button", name="Close study").click()
    expect(page.locator("#detail-state")).to_have_text("Closed")
    expect(lifecycle.get_by_role("button")).to_have_count(0)
    expect(page.locator("#permalink")).to_be_hidden()
    closed = fresh(db, study.id)
    assert closed is not None and closed.state == StudyState.closed


def test_editing_the_spec_saves_drafts_and_explains_409(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    study = factory.study(user, spec_dict("Editable"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Editable").click()
    page.get_by_role("tab", name="Edit as YAML").click()
    editor = page.get_by_label("Edit the study file (YAML)")
    expect(editor).to_have_value(re.compile("name: Editable"))

    editor.fill(editor.input_value().replace("name: Editable", "name: Renamed"))
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Renamed")).to_be_visible()
    # the save is over once the panel reloaded the saved file and validated it: an edit typed
    # before then is replaced by the file the panel reloads
    expect(page.locator("#validate-status")).to_contain_text("Every environment builds.")
    expect(editor).to_have_value(re.compile("name: Renamed"))
    saved = fresh(db, study.id)
    assert saved is not None and saved.name == "Renamed"

    editor.fill(editor.input_value() + "  fps: 0\n")  # a key of the last environment
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#detail-error")).to_contain_text(
        "CartPole: Steps per second (async) must be at least 1"
    )
    editor.fill("name: [unclosed")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#detail-error")).to_contain_text("line 1")

    page.get_by_role("button", name="Discard edits").click()
    activate(page)
    expect(page.locator("#detail-state")).to_have_text("Active")
    expect(page.locator("#edit-hint")).to_contain_text("pause it first")
    page.get_by_role("button", name="Save changes").click()
    # The server's 409 message, as sent.
    expect(page.locator("#detail-error")).to_contain_text("study cannot be edited; pause it first.")


def test_delete_a_draft(live_server: str, page: Page, factory: Factory, db: Session):
    user = factory.user()
    keep = factory.study(user, spec_dict("Keep me"))
    doomed = factory.study(user, spec_dict("Delete me"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Delete me").click()
    page.get_by_role("button", name="Delete draft").click()
    page.get_by_role("dialog", name="Delete this draft?").get_by_role(
        "button", name="Delete draft"
    ).click()

    expect(study_row(page, "Delete me")).to_have_count(0)
    expect(study_row(page, "Keep me")).to_be_visible()
    expect(page.locator("#detail")).to_be_hidden()
    assert fresh(db, doomed.id) is None
    assert fresh(db, keep.id) is not None


def test_filter_by_state_and_shortcuts(live_server: str, page: Page, factory: Factory):
    user = factory.user()
    factory.study(user, spec_dict("Still a draft"))
    log_in(page, live_server, user)
    expect(study_row(page, "Still a draft")).to_be_visible()
    expect(page.locator(".shortcuts")).to_contain_text("new study")

    page.keyboard.press("/")
    expect(page.get_by_label("State")).to_be_focused()
    page.get_by_label("State").select_option("active")
    expect(page.get_by_text("No active studies")).to_be_visible()
    expect(study_row(page, "Still a draft")).to_have_count(0)
    page.get_by_label("State").select_option("draft")
    expect(study_row(page, "Still a draft")).to_be_visible()

    page.locator("body").click()
    page.keyboard.press("n")  # the form editor of a new study, with its name to type
    expect(page.locator("#detail-name")).to_have_text("New study")
    expect(page.get_by_label("Study name")).to_be_focused()
    page.locator("body").click()
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()

    page.get_by_role("button", name="Still a draft").click()
    expect(page.locator("#detail")).to_be_visible()
    page.locator("body").click()
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()


def test_another_designers_studies_are_not_shown(live_server: str, page: Page, factory: Factory):
    me = factory.user()
    other = factory.user()
    factory.study(me, spec_dict("Mine"))
    factory.study(other, spec_dict("Theirs"))
    log_in(page, live_server, me)
    expect(study_row(page, "Mine")).to_be_visible()
    expect(page.locator("#studies-body tr")).to_have_count(1)
    expect(page.get_by_text("Theirs")).to_have_count(0)


def test_admin_creates_and_deactivates_a_user(
    live_server: str, page: Page, factory: Factory, db: Session
):
    admin = factory.user(role=Role.admin)
    log_in(page, live_server, admin)
    users = page.locator("#users-section")
    expect(users.get_by_role("heading", name="Users")).to_be_visible()
    expect(users.locator("#users-body tr", has_text=admin.email)).to_contain_text("you")

    users.get_by_label("Email").fill("new.designer@example.com")
    users.get_by_label("Name").fill("New Designer")
    password = users.get_by_label("Password (12+ characters, not a common one)")
    password.fill("short")
    users.get_by_role("button", name="Create user").click()
    expect(users.locator("#user-form-error")).to_contain_text("password:")
    password.fill("password1234")
    users.get_by_role("button", name="Create user").click()
    expect(users.locator("#user-form-error")).to_contain_text("too common or easy to guess")

    password.fill("a long enough password")
    users.get_by_role("button", name="Create user").click()
    row = users.locator("#users-body tr", has_text="new.designer@example.com")
    expect(row).to_contain_text("designer")
    expect(row).to_contain_text("Active")
    db.expire_all()
    created = db.scalar(select(User).where(User.email == "new.designer@example.com"))
    assert created is not None and created.role == Role.designer and created.is_active

    row.get_by_role("button", name="Deactivate").click()
    page.get_by_role("dialog", name="Deactivate this user?").get_by_role(
        "button", name="Deactivate"
    ).click()
    expect(row).to_contain_text("Deactivated")
    db.expire_all()
    deactivated = db.get(User, created.id)
    assert deactivated is not None and deactivated.is_active is False


def test_admin_sees_and_clears_a_login_limit(live_server: str, page: Page, factory: Factory):
    admin, user = factory.user(role=Role.admin), factory.user()
    for _ in range(2):
        res = httpx.post(
            f"{live_server}/api/auth/login", json={"email": user.email, "password": "wrong"}
        )
        assert res.status_code == 401
    log_in(page, live_server, admin)
    limits = page.locator("#login-limits-body")
    row = limits.locator("tr", has_text=user.email)
    expect(row).to_contain_text("127.0.0.1")
    expect(row).to_contain_text("2")
    row.get_by_role("button", name=f"Clear the login limit of {user.email} from 127.0.0.1").click()
    expect(row).to_have_count(0)
    expect(limits.locator("tr", has_text="any")).to_contain_text("2")  # the address's own


def test_a_lost_session_returns_to_the_login_form(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    factory.study(user, spec_dict("Orphan"))
    log_in(page, live_server, user)
    expect(study_row(page, "Orphan")).to_be_visible()
    admin = factory.client(factory.user(role=Role.admin))
    assert admin.patch(f"/api/users/{user.id}", json={"is_active": False}).status_code == 200

    page.get_by_role("button", name="Orphan").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text("Your session has ended; log in again.")


def test_validate_shows_spaces_first_frame_and_speed_warning_until_fixed(
    live_server: str, page: Page, factory: Factory
):
    user = factory.user()
    factory.study(user, spec_dict("Pacing", mode="async", fps=15))  # CartPole runs at 50
    log_in(page, live_server, user)
    page.get_by_role("button", name="Pacing").click()

    page.get_by_role("button", name="Validate").click()
    report = page.get_by_role("article", name="Validation of CartPole")
    frame = report.get_by_role("img", name="First frame of CartPole")
    expect(frame).to_be_visible()
    assert frame.evaluate("img => img.complete && img.naturalWidth > 0")
    expect(report).to_contain_text("float32 [4]")
    expect(report).to_contain_text("int64 scalar, 2 values")
    expect(report).to_contain_text("0.30× real speed")
    warnings = report.get_by_role("list", name="warnings")
    expect(warnings).to_contain_text("Steps per second (async): plays at 0.30× real speed")

    page.get_by_role("tab", name="Edit as YAML").click()
    editor = page.get_by_label("Edit the study file (YAML)")
    editor.fill(re.sub(r"fps: 15", "fps: 50", editor.input_value()))
    page.get_by_role("button", name="Save changes").click()  # validates the saved study
    expect(page.locator("#validate-status")).to_contain_text("Every environment builds.")
    page.get_by_role("tab", name="Form").click()
    expect(report).to_contain_text("1.00× real speed")
    expect(report.get_by_role("list", name="warnings")).to_have_count(0)


def test_validate_lists_problems_with_field_paths(live_server: str, page: Page, factory: Factory):
    user = factory.user()
    bad = {"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {"bogus": 1}}
    factory.study(user, spec_dict("Broken kwargs", source=bad))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Broken kwargs").click()
    page.get_by_role("button", name="Validate").click()
    report = page.get_by_role("article", name="Validation of CartPole")
    expect(report.get_by_role("list", name="problems")).to_contain_text(
        "bogus: unknown setting 'bogus'"
    )
    expect(page.locator("#validate-status")).to_have_text("Some environments do not build.")


def _lan_address() -> str | None:
    """This machine's first non-loopback IPv4 address (None when it has none)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: it picks the route's address
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_login_over_plain_http_says_why_the_secure_cookie_was_refused(
    page: Page, factory: Factory, settings
):
    """Production cookies are Secure: over plain http:// to another host the browser drops
    them. The login page says so and names the two ways out instead of failing silently."""
    import socket
    import threading
    import time

    import uvicorn

    from server.main import SERVE_OPTIONS, create_app

    address = _lan_address()
    if address is None:
        pytest.skip("no non-loopback address: browsers keep Secure cookies on localhost")
    app = create_app(settings.model_copy(update={"environment": "production"}))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((address, 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", **SERVE_OPTIONS))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        user = factory.user()
        log_in(page, f"http://{address}:{sock.getsockname()[1]}", user)
        alert = page.locator("#login-error")
        expect(alert).to_contain_text("refused the login cookie")
        expect(alert).to_contain_text("STUDIO_INSECURE_COOKIES=true")
        expect(page.get_by_role("form", name="Log in")).to_be_visible()
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
