"""How an export runs on Apache Beam: the runner and its options (no Beam import here).

It travels with :class:`~server.export.base.ExportOptions` into the export process, so it is
a small picklable value; a format that runs on Beam (``Format.on_beam``) turns it into
pipeline options.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

RUNNING_MODES = ("multi_processing", "multi_threading", "in_memory")


@dataclass(frozen=True)
class BeamConfig:
    """A Beam runner and its pipeline options.

    ``workers`` and ``running_mode`` apply to the DirectRunner (``direct_num_workers``,
    ``direct_running_mode``); other runners (FlinkRunner, SparkRunner, DataflowRunner) take
    everything they need from ``options``, pipeline flags such as ``--flink_master=host:8081``.
    """

    runner: str = "DirectRunner"
    workers: int = 2
    running_mode: str = "multi_processing"
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("a Beam export needs at least one worker")
        if self.running_mode not in RUNNING_MODES:
            raise ValueError(f"running mode must be one of {RUNNING_MODES}")

    @property
    def direct(self) -> bool:
        """Whether the pipeline runs on this machine (the DirectRunner)."""
        return self.runner in ("DirectRunner", "direct")

    def flags(self) -> list[str]:
        """The pipeline's command-line flags (``options`` last: they override ours)."""
        # workers log at INFO by default: dozens of lines per export in the app's log
        flags = [f"--runner={self.runner}", "--default_sdk_harness_log_level=WARNING"]
        if self.direct:
            flags += [
                f"--direct_num_workers={self.workers}",
                f"--direct_running_mode={self.running_mode}",
            ]
        return flags + list(self.options)

    @classmethod
    def from_settings(
        cls, runner: str, options: str, workers: int, running_mode: str
    ) -> BeamConfig:
        """From the STUDIO_BEAM_* settings: ``options`` is split as a shell would split it;
        ``workers`` 0 means one per CPU core."""
        return cls(
            runner=runner,
            workers=workers or os.cpu_count() or 1,
            running_mode=running_mode,
            options=tuple(shlex.split(options)),
        )
