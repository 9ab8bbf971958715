"""Password policy: a minimum length and no common or easily guessed password (zxcvbn)."""

from __future__ import annotations

from collections.abc import Iterable

from zxcvbn import zxcvbn

MIN_LENGTH = 12
# zxcvbn's scale: 3 is "safely unguessable: moderate protection from an offline slow-hash
# attack" (about 10^8 guesses), which an argon2 hash is.
MIN_SCORE = 3
# zxcvbn refuses longer input (its matching grows fast with length): a longer password is
# judged by its first 72 characters, which only makes the judgement stricter.
_SCORED_CHARS = 72
_SITE_WORDS = ("rlds", "studio", "rlds studio", "admin", "designer")


def password_problem(password: str, user_inputs: Iterable[str] = ()) -> str | None:
    """Why ``password`` is refused, or None when it is acceptable.

    ``user_inputs`` (the account's email, name) count as guessable words.
    """
    if len(password) < MIN_LENGTH:
        return f"Use at least {MIN_LENGTH} characters."
    words = [w for w in user_inputs if w]
    words += [w.split("@", 1)[0] for w in words if "@" in w]
    result = zxcvbn(password[:_SCORED_CHARS], user_inputs=[*words, *_SITE_WORDS])
    if result["score"] >= MIN_SCORE:
        return None
    warning = str(result["feedback"].get("warning") or "").strip()
    why = f" ({warning.rstrip('.')})" if warning else ""
    return (
        f"This password is too common or easy to guess{why}. "
        "Use a longer passphrase of uncommon words."
    )
