"""envlogger, importable under numpy 2.

envlogger 1.2's codec still uses ``np.unicode_``, an alias numpy 2 removed; it must exist
before envlogger encodes or decodes anything, so every export module imports envlogger from here.
"""

from __future__ import annotations

import numpy as np

if not hasattr(np, "unicode_"):
    np.unicode_ = np.str_  # type: ignore[attr-defined]

import envlogger  # noqa: E402

__all__ = ["envlogger"]
