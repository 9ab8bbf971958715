"""EpisodeWriter: metadata, finalize semantics, flushing, JSON helpers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from server.recording import format as fmt
from server.recording.writer import (
    EpisodeWriter,
    episode_metadata,
    info_json,
    open_reader,
    to_json,
)
from tests.runtime.fake_envs import CounterEnv


def meta(seed=5):
    return episode_metadata(
        episode_id="e1", study_id=3, env_id="counter", env_config="{}", seed=seed
    )


def step_fn(timestep, action, env):
    return {"frame": b"\xff\xd8jpeg", "input": to_json(None), "timing": "{}", "info": "{}"}


def numbered(timestep, action, env):
    """A step_fn whose input is the step's number, to check order."""
    return {"frame": b"f", "input": str(env.t), "timing": "{}", "info": "{}"}


def test_episode_metadata_has_the_format_keys():
    m = meta()
    assert tuple(m) == fmt.EPISODE_METADATA_KEYS
    assert m["format_version"] == fmt.FORMAT_VERSION and m["study_id"] == "3"
    assert meta(seed=None)["seed"] == -1


def test_write_finalize_twice_and_read_back(tmp_path):
    env = CounterEnv(episode_len=3)
    writer = EpisodeWriter(env, tmp_path / "ep", meta(), step_fn)
    writer.reset()
    for action in (1, 2, 1):
        writer.step(np.int64(action))
    writer.finalize({"end_reason": "terminated"})
    writer.finalize({"end_reason": "other"})  # no-op
    assert writer.finalized
    with pytest.raises(RuntimeError):
        writer.step(np.int64(0))
    with open_reader(tmp_path / "ep") as reader:
        steps = list(reader.steps)
        assert reader.metadata()["episode_id"] == "e1"
        assert list(reader.episode_metadata()) == [{"end_reason": "terminated"}]
        assert reader.discount_spec().dtype == np.float64
    assert [s.custom_data["frame"] for s in steps] == [b"\xff\xd8jpeg"] * 4
    assert [int(s.timestep.observation[0, 0, 0]) for s in steps] == [0, 1, 2, 3]


def test_finalize_without_steps_is_safe(tmp_path):
    writer = EpisodeWriter(CounterEnv(), tmp_path / "empty", meta(), step_fn)
    writer.finalize({"end_reason": "canceled"})
    writer.finalize()
    assert writer.finalized


def test_flush_bookkeeping(tmp_path):
    writer = EpisodeWriter(CounterEnv(episode_len=99), tmp_path / "f", meta(), step_fn,
                           flush_interval_s=3600)  # fmt: skip
    writer.reset()  # the first step is flushed at once
    assert not writer.dirty and writer.seconds_to_flush() is None
    writer.step(np.int64(1))
    assert writer.dirty and 0 < writer.seconds_to_flush() <= 3600
    writer.flush()
    assert not writer.dirty
    writer.finalize()
    assert writer.seconds_to_flush() is None


def test_json_helpers_never_fail():
    assert json.loads(to_json({"a": np.float32(1.5), "b": np.arange(3)})) == {
        "a": 1.5,
        "b": [0, 1, 2],
    }
    assert json.loads(to_json({"o": object()}))["o"].startswith("<object")
    assert json.loads(info_json({"x": math.nan, "y": 1}))["x"] == "nan"
    assert json.loads(info_json(None)) == {}
    big = json.loads(info_json({"img": np.zeros((100, 100))}))
    assert isinstance(big["img"], str)


def test_deferred_records_are_written_on_commit_and_finalize(tmp_path):
    writer = EpisodeWriter(CounterEnv(episode_len=99), tmp_path / "d", meta(), step_fn,
                           defer_records=True)  # fmt: skip
    writer.reset()
    writer.step(np.int64(1))
    assert writer.dirty and writer.seconds_to_flush() is not None
    writer.commit()
    writer.step(np.int64(2))
    writer.finalize({"end_reason": "canceled"})  # commits the held step first
    with open_reader(tmp_path / "d") as reader:
        steps = list(reader.steps)
        assert list(reader.episode_metadata()) == [{"end_reason": "canceled"}]
    assert [float(s.timestep.reward) for s in steps[1:]] == [1.0, 2.0]


def test_background_flushes_keep_every_step_in_order(tmp_path):
    """Flushes run in a thread while stepping goes on (every ms here); the log ends with
    every step in order, and ``flush()`` returns only once they are all durable."""

    env = CounterEnv(episode_len=10_000)
    writer = EpisodeWriter(env, tmp_path / "e", meta(), numbered, flush_interval_s=0.001,
                           defer_records=True, background_flush=True)  # fmt: skip
    writer.reset()
    for i in range(1, 400):
        writer.step(np.int64(i % 3))
        writer.commit()
        if i == 200:
            writer.flush()
            assert not writer.dirty
            with open_reader(tmp_path / "e") as reader:
                assert len(list(reader.steps)) == 201
    writer.finalize()
    with open_reader(tmp_path / "e") as reader:
        steps = list(reader.steps)
    assert [int(s.custom_data["input"]) for s in steps] == list(range(400))


def test_steps_that_waited_for_a_background_flush_start_the_journal_again(tmp_path):
    """Once a background flush is done, the journal starts again with the records of the
    steps recorded while it ran, and nothing else: it holds what the log lacks, and stays
    as short as the time between flushes."""
    from server.recording import journal

    env = CounterEnv(episode_len=10_000)
    writer = EpisodeWriter(env, tmp_path / "e", meta(), numbered, flush_interval_s=3600,
                           defer_records=True, background_flush=True)  # fmt: skip
    writer.reset()
    writer.commit()  # the first step is flushed at once, in the background
    backend = writer._backend
    assert backend is not None and backend.flusher is not None and backend.flusher.running
    for i in range(1, 6):  # recorded while it may still run: they wait
        writer.step(np.int64(i % 3))
    assert backend.flusher.done.wait(30)
    writer.commit()  # sees the flush done: the journal's new lap is steps 1-5
    _, lap = journal.read(journal.journal_path(tmp_path / "e").read_bytes())
    assert [index for index, _, _ in lap] == [1, 2, 3, 4, 5]
    assert [int(journal.decode(step).custom_data["input"]) for _, step, _ in lap] == [1, 2, 3, 4, 5]
    writer.finalize()
    with open_reader(tmp_path / "e") as reader:
        assert [int(s.custom_data["input"]) for s in reader.steps] == list(range(6))


def test_background_flushes_of_every_writer_share_one_thread(tmp_path):
    """The flushes of several episodes in one process (a worker's sessions) run one after
    the other in one flush thread, not in a new thread each; every log holds all its steps."""
    import threading

    writers = [EpisodeWriter(CounterEnv(episode_len=10_000), tmp_path / f"e{n}", meta(),
                             numbered, flush_interval_s=0.0, defer_records=True,
                             background_flush=True) for n in range(3)]  # fmt: skip
    for writer in writers:
        writer.reset()
    seen: set[int] = set()
    for i in range(1, 40):  # every commit asks for a flush (interval 0)
        for writer in writers:
            writer.step(np.int64(i % 3))
            writer.commit()
        seen |= {t.ident or 0 for t in threading.enumerate() if t.name == "log-flush"}
    for writer in writers:
        writer.finalize()
    assert len(seen) == 1
    for n in range(3):
        with open_reader(tmp_path / f"e{n}") as reader:
            assert [int(s.custom_data["input"]) for s in reader.steps] == list(range(40))


def test_a_writer_left_open_at_exit_is_closed_with_its_steps(tmp_path):
    """A writer nobody finalized (a crashed caller) is closed by envlogger's ``__del__`` as
    the interpreter ends: its last flush runs in place, not in a thread that can no longer
    start (that waited forever), and the log holds every step."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import numpy as np
        from server.recording.writer import EpisodeWriter
        from tests.recording.test_writer import meta, numbered
        from tests.runtime.fake_envs import CounterEnv
        writer = EpisodeWriter(CounterEnv(episode_len=10_000), {str(tmp_path / "e")!r}, meta(),
                               numbered, flush_interval_s=0.0, defer_records=True,
                               background_flush=True)
        writer.reset()
        for i in range(1, 30):
            writer.step(np.int64(i % 3))
            writer.commit()
        writer.step(np.int64(1))  # recorded, not committed: the close writes it
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[2],
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    with open_reader(tmp_path / "e") as reader:
        assert len(list(reader.steps)) == 31
