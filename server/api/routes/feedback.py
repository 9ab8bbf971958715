"""A feedback study's results for its designer: the preference dataset's downloads and the
study's feedback figures (docs/feedback.md)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["feedback"])
