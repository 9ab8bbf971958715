"""``GET /api/policies``: the shared-autonomy policies the operator installed, as the study
editor offers them (ids, a description read from the factory's docstring, where from);
nothing is imported to list them."""

from __future__ import annotations

import sys

import pytest

from server.runtime.policy_list import factory_description
from tests.runtime.fake_policies import ALLOWED, FAKE


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    """The test settings, allowing the fake policies through STUDIO_POLICIES."""
    return settings.model_copy(update={"policies": ALLOWED})


def test_lists_installed_policies_without_importing_them(factory):
    sys.modules.pop(FAKE, None)
    client = factory.client(factory.user())
    res = client.get("/api/policies")
    assert res.status_code == 200, res.text
    listed = {p["id"]: p for p in res.json()}
    assert list(listed) == sorted(listed)
    # the project's own entry point, described by its factory's docstring
    scripted = listed["fetch-pick-place-scripted"]
    assert scripted["origin"] == "package rlds-studio"
    assert scripted["description"].startswith("For the catalog's FetchPickAndPlace: moves")
    assert "\n" not in scripted["description"]
    # the operator's STUDIO_POLICIES, listed but not imported (no docstring: no description)
    assert listed["gives-two"] == {"id": "gives-two", "description": None,
                                   "origin": "STUDIO_POLICIES"}  # fmt: skip
    assert "fails-fourth" in listed
    assert FAKE not in sys.modules


def test_needs_a_login(client):
    assert client.get("/api/policies").status_code == 401


def test_description_of_an_unknown_or_missing_factory_is_none():
    assert factory_description("no_such_package.mod:factory") is None
    assert factory_description(f"{FAKE}:no_such_function") is None
    assert factory_description("server.runtime.scripted_policies:fetch_pick_place")
