"""The player's HTTP routes: joining through a permalink and the test-play view (bad input)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "body",
    [
        {"token": "\x00", "participant_id": "worker-1"},
        {"token": "t", "participant_id": "a\x00"},
        {"token": "t" * 65, "participant_id": "worker-1"},
        {"token": "t", "participant_id": "worker-1", "extra": 1},
    ],
)
def test_join_refuses_bad_bodies_with_422(body, client) -> None:  # type: ignore[no-untyped-def]
    """Found by tests/test_api_fuzz.py: a NUL in the token was a 500 on PostgreSQL."""
    res = client.post("/api/play/join", json=body)
    assert res.status_code == 422, res.text
    assert "detail" in res.json()


@pytest.mark.parametrize("study_id", [0, 2**31, 2**70])
def test_test_play_of_an_impossible_study_id_is_422(study_id: int, factory) -> None:  # type: ignore[no-untyped-def]
    res = factory.client(factory.user()).get(f"/api/play/studies/{study_id}")
    assert res.status_code == 422, res.text
