"""The join rule of narrations per step (server/export/narration.py)."""

from __future__ import annotations

from server.export.narration import JOIN, NarratedSpan, narration_column


def test_overlaps_join_in_start_order_ties_as_written() -> None:
    spans = (
        NarratedSpan(2, 4, "lift"),
        NarratedSpan(0, 2, "reach"),
        NarratedSpan(2, 2, "grasp"),  # starts with "lift": after it, as written
    )
    assert narration_column(spans, 6) == [
        "reach", "reach", f"reach{JOIN}lift{JOIN}grasp", "lift", "lift", "",
    ]  # fmt: skip


def test_past_the_end_is_cut_and_blank_or_empty_ranges_add_nothing() -> None:
    spans = (
        NarratedSpan(3, 99, "drift"),  # past the (cut) episode's end: the steps it has
        NarratedSpan(7, 9, "after"),  # starts after the end: left out
        NarratedSpan(0, 1, "   "),  # blank text: nothing
        NarratedSpan(2, 1, "backwards"),  # no step
    )
    assert narration_column(spans, 5) == ["", "", "", "drift", "drift"]
    assert narration_column((), 3) == ["", "", ""]
