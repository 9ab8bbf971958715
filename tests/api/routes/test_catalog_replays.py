"""The catalog says whether an entry's defaults replay, once Validate has built them."""

from __future__ import annotations

from server.runtime.catalog import CATALOG
from server.services.studies.env_check import allowed_environments
from server.services.studies.env_validation import catalog_spec, validate_environments


def test_an_entry_built_once_says_it_replays_and_the_others_do_not_say(factory, settings):
    client = factory.client(factory.user())
    before = {e["key"]: e["replays"] for e in client.get("/api/catalog").json()}
    assert before["CartPole"] is None  # not built here yet
    (report,) = validate_environments(
        [catalog_spec(CATALOG["CartPole"])], settings, allowed_environments(settings)
    )
    assert report["replay"]["replays"] is True and report["replay"]["steps"] > 0
    after = {e["key"]: e["replays"] for e in client.get("/api/catalog").json()}
    assert after["CartPole"] is True
    assert after["MountainCar"] is None
