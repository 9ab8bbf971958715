"""The one import point of envlogger in this package (numpy 2 compatibility lives here)."""

from __future__ import annotations

import numpy as np

# envlogger 1.2's codec still uses ``np.unicode_``, removed in numpy 2. Alias it before
# envlogger encodes or decodes anything; every envlogger import in server.recording goes
# through this module.
if not hasattr(np, "unicode_"):
    np.unicode_ = np.str_  # type: ignore[attr-defined]

import envlogger  # noqa: E402
from envlogger import environment_logger, step_data  # noqa: E402
from envlogger.backends import riegeli_backend_writer  # noqa: E402
from envlogger.backends.python import (
    riegeli_dataset_reader,  # noqa: E402
    riegeli_dataset_writer,  # noqa: E402
)
from envlogger.converters import codec, spec_codec  # noqa: E402
from envlogger.proto import storage_pb2  # noqa: E402

__all__ = [
    "codec",
    "envlogger",
    "environment_logger",
    "riegeli_backend_writer",
    "riegeli_dataset_reader",
    "riegeli_dataset_writer",
    "spec_codec",
    "step_data",
    "storage_pb2",
]
