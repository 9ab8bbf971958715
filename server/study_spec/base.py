"""What every part of the study format shares: the strict base model and the checks
of text and JSON data (no NUL, no control characters, bounded nesting)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

CONTROL_CHARACTER = "control_character"  # the error type of :func:`reject_control_chars`

# Characters no study file can hold: what YAML refuses in a file (C0 controls but tab and
# line breaks, DEL, C1 controls but NEL, U+FFFE/U+FFFF) and lone surrogates (not UTF-8).
_NOT_TEXT = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _nul(text: str) -> str | None:
    return "\x00" if "\x00" in text else None


def _not_text(text: str) -> str | None:
    found = _NOT_TEXT.search(text)
    return found.group() if found else None


def char_name(char: str) -> str:
    """How an error message names a refused character (``NUL``, ``U+0007``)."""
    return "NUL" if char == "\x00" else f"U+{ord(char):04X}"


Loc = tuple[str | int, ...]


def bad_char_path(
    value: Any, path: Loc = (), find: Callable[[str], str | None] = _nul
) -> tuple[Loc, str] | None:
    """Where ``value`` (nested dicts, lists and their keys) holds a character ``find`` spots
    (by default NUL), and that character; None when nowhere.

    Walks with its own stack: a deeply nested input cannot exhaust Python's recursion.
    """
    stack: list[tuple[Any, Loc]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if (char := find(item)) is not None:
                return where, char
        elif isinstance(item, dict):
            for key, sub in reversed(item.items()):
                at = (*where, str(key))
                if isinstance(key, str) and (char := find(key)) is not None:
                    return at, char
                stack.append((sub, at))
        elif isinstance(item, list | tuple):
            for i in reversed(range(len(item))):
                stack.append((item[i], (*where, i)))
    return None


def _dotted(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "value"


def control_char_problem(value: Any) -> tuple[Loc, str] | None:
    """Where ``value``'s text holds what a study file cannot (a control character, a lone
    surrogate: see :data:`_NOT_TEXT`) and a message naming it; None when nowhere."""
    found = bad_char_path(value, find=_not_text)
    if found is None:
        return None
    where, char = found
    return (
        where,
        f"text cannot contain the control character {char_name(char)} (at {_dotted(where)!r})",
    )


def json_data_problem(value: Any, max_depth: int, max_bytes: int) -> str | None:
    """Why ``value`` is not plain JSON data (finite numbers, string keys) nested at most
    ``max_depth`` containers deep and ``max_bytes`` long as JSON; None when it is."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:  # its own stack: a 20,000-deep list is refused, not a RecursionError
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels"
            if isinstance(item, dict) and not all(isinstance(k, str) for k in item):
                return "mapping keys must be strings"
            stack.extend(
                (sub, depth + 1) for sub in (item.values() if isinstance(item, dict) else item)
            )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "numbers must be finite"
        elif item is not None and not isinstance(item, str | int):  # bool is an int
            return f"{type(item).__name__} is not a JSON value"
    if len(json.dumps(value)) > max_bytes:
        return f"longer than {max_bytes} bytes as JSON"
    return None


def _refuse_chars(data: Any, find: Callable[[str], str | None], error: str, what: str) -> Any:
    found = bad_char_path(data, find=find)
    if found is not None:
        where, char = found
        # ``path`` (in the error's context) is added to ``loc`` by the one place that turns
        # errors into answers (``server.errors.validation_detail``): the answer names the field
        raise PydanticCustomError(
            error,
            "text cannot contain {what} (at {where})",
            {"what": what.format(char=char_name(char)), "where": repr(_dotted(where)),
             "path": list(where)},
        )  # fmt: skip
    return data


def reject_nul(data: Any) -> Any:
    """A ``mode="before"`` model validator: no NUL character anywhere in the input.

    PostgreSQL text cannot hold NUL, so such input is refused here (422) instead of failing
    in the database (500).
    """
    return _refuse_chars(data, _nul, "value_error", "NUL characters")


def reject_control_chars(data: Any) -> Any:
    """A ``mode="before"`` model validator: no text a study file could not hold."""
    return _refuse_chars(data, _not_text, CONTROL_CHARACTER, "the control character {char}")


class StrictModel(BaseModel):
    """A request or spec body: unknown fields and NUL characters are refused."""

    model_config = ConfigDict(extra="forbid")

    _no_nul = model_validator(mode="before")(reject_nul)
