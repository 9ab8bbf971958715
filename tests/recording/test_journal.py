"""The step journal: every step a worker recorded survives its death, torn or old records
are never read as steps, and recovery never touches a log a live worker holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import dm_env
import numpy as np
import pytest
from envlogger import step_data

from server.recording import codec, journal
from server.recording.recovery import recover
from server.recording.writer import open_reader

ROOT = Path(__file__).resolve().parents[2]

# A worker's life in a child process: record STEPS steps (deferred, as workers do; no timed
# flush after the first step, or one every few ms in the background), print each step's
# index once step() returned (the moment its frame may be sent), commit some of them, then
# die by SIGKILL without finalizing.
CHILD = """
import os, signal, sys
import numpy as np
from pathlib import Path
from server.recording.writer import EpisodeWriter, episode_metadata
from tests.runtime.fake_envs import CounterEnv

def step_fn(timestep, action, env):
    return {"frame": b"jpeg-%d" % env.t, "input": str(env.t), "timing": "{}", "info": "{}"}

meta = episode_metadata(episode_id="e1", study_id=1, env_id="counter", env_config="{}", seed=3)
writer = EpisodeWriter(CounterEnv(episode_len=10_000), Path(sys.argv[1]), meta, step_fn,
                       flush_interval_s=float(sys.argv[3]), defer_records=True,
                       background_flush=sys.argv[4] == "1")
writer.reset()
writer.commit()  # the first step is flushed at once
print(0, flush=True)
for i in range(1, int(sys.argv[2])):
    writer.step(np.int64(i % 3))
    print(i, flush=True)
    if i % 2 or sys.argv[4] == "1":  # a worker commits each step before the next one
        writer.commit()  # in the Riegeli writer's buffer, not yet flushed
os.kill(os.getpid(), signal.SIGKILL)
"""


def _die_after(directory: Path, steps: int, flush_s: float = 3600, bg: bool = False) -> list[int]:
    args = [str(directory), str(steps), str(flush_s), "1" if bg else "0"]
    proc = subprocess.run([sys.executable, "-c", CHILD, *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    return [int(line) for line in proc.stdout.split()]


def _logged(directory: Path) -> list[step_data.StepData]:
    try:
        with open_reader(directory) as reader:
            return list(reader.steps)
    except Exception:
        return []


@pytest.mark.parametrize(
    ("steps", "flush_s", "background"),
    [(40, 3600, False), (300, 0.001, True)],
    ids=["unflushed", "background-flushes"],
)
def test_a_killed_worker_loses_no_step_whose_frame_could_be_sent(
    tmp_path, steps, flush_s, background
):
    """Also with a flush in the background every millisecond: steps recorded while one ran
    wait, journaled again at the journal's start once it is done; the kill lands anywhere."""
    directory = tmp_path / "episode"
    sent = _die_after(directory, steps, flush_s, background)
    assert sent == list(range(steps))
    before = _logged(directory)
    assert len(before) < len(sent) or background  # the log alone lost steps: the journal's job
    assert journal.journal_path(directory).exists()

    assert recover(directory) == len(sent) - len(before)
    steps = _logged(directory)
    assert len(steps) == len(sent)
    assert not journal.journal_path(directory).exists()
    assert not any(p.name.endswith((".recovered", ".replaced")) for p in tmp_path.iterdir())
    for t, step in enumerate(steps):  # each step as the worker recorded it
        assert step.timestep.step_type == (dm_env.StepType.FIRST if t == 0 else dm_env.StepType.MID)
        assert (step.timestep.observation == t % 256).all()
        assert step.custom_data["frame"] == b"jpeg-%d" % t
        assert step.custom_data["input"] == str(t)
        if t:
            assert int(step.action) == t % 3 and float(step.timestep.reward) == t % 3
    with open_reader(directory) as reader:
        assert reader.metadata()["episode_id"] == "e1"
        assert reader.observation_spec().shape == (8, 8, 3)
    assert recover(directory) == 0  # done once


def test_recovery_waits_for_a_live_worker_and_leaves_its_log_alone(tmp_path):
    directory = tmp_path / "live"
    directory.mkdir()
    holder = journal.Journal(directory, {"episode_id": "e"})  # a live worker's lock
    try:
        assert recover(directory, wait_s=0.2) == 0
        assert journal.journal_path(directory).exists()
    finally:
        holder.close()
    assert not journal.journal_path(directory).exists()  # a clean close removes it
    assert recover(directory) == 0


def _step(t: int) -> step_data.StepData:
    observation = {"pixels": np.full((4, 4, 3), t, np.uint8), "joints": np.arange(3.0) * t,
                   "count": np.int32(t)}  # fmt: skip
    timestep = dm_env.TimeStep(dm_env.StepType.MID, np.float32(t), np.float32(1.0), observation)
    return step_data.StepData(timestep, (np.int64(t), np.float32(0.5)), {"frame": b"f%d" % t})


def _journal_bytes(directory: Path) -> bytes:
    return journal.journal_path(directory).read_bytes()


def test_only_the_current_lap_is_read_and_torn_records_are_not(tmp_path):
    writer = journal.Journal(tmp_path, {"meta": 1})
    for t in range(6):
        writer.append(codec.encode(_step(t)), t == 0)
    writer.restart()  # steps 0-5 flushed in the log
    for t in range(6, 8):
        writer.append(codec.encode(_step(t)), False)
    data = _journal_bytes(tmp_path)
    metadata, steps = journal.read(data)
    assert metadata == {"meta": 1}
    assert [index for index, _, _ in steps] == [6, 7]  # not the older lap behind them
    index, encoded, is_new = steps[1]
    step = journal.decode(encoded)
    assert not is_new and step.timestep.observation["joints"].tolist() == [0.0, 7.0, 14.0]
    assert step.timestep.observation["count"].dtype == np.int32 and step.action[1] == 0.5
    assert step.custom_data == {"frame": b"f7"}
    # a write cut short by the process's death: the record is not read
    end = data.index(journal.FOOT.pack(7, journal.STEP_MAGIC))
    assert [i for i, _, _ in journal.read(data[:end])[1]] == [6]
    with pytest.raises(ValueError):
        journal.read(b"not a journal")
    writer.close()


class _Call:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {RAN}",))


RAN = Path("/tmp/rlds-studio-journal-ran")


def test_only_step_types_are_unpickled():
    """A record in the journal's framing whose pickle calls something else is not loaded."""
    RAN.unlink(missing_ok=True)
    meta = b"".join(bytes(p) for p in journal._record(journal.META, {}))  # noqa: SLF001
    evil = b"".join(bytes(p) for p in journal._record(0, (_Call(), True)))  # noqa: SLF001
    assert b"system" in evil
    metadata, steps = journal.read(meta + evil)
    assert metadata == {} and steps == []
    assert not RAN.exists()


def test_an_interrupted_recovery_is_completed(tmp_path):
    directory = tmp_path / "episode"
    sent = _die_after(directory, 12)
    # as if a recovery died between moving the old folder away and moving the new one in
    os.rename(directory, tmp_path / "episode.replaced")
    assert recover(directory) > 0
    assert len(_logged(directory)) == len(sent)
    assert not (tmp_path / "episode.replaced").exists()


def test_a_journal_of_pickled_steps_from_an_earlier_version_is_still_read():
    """Until 2026-11-25 a step's record was its pickled StepData: a worker of that version
    killed before an upgrade leaves such a journal, and its steps still go back in the log."""
    records = [journal._record(journal.META, {"meta": 1})]  # noqa: SLF001
    records += [journal._record(t, (_step(t), t == 4)) for t in (4, 5)]  # noqa: SLF001
    data = b"".join(bytes(part) for record in records for part in record)
    metadata, steps = journal.read(data)
    assert metadata == {"meta": 1}
    assert [(index, is_new) for index, _, is_new in steps] == [(4, True), (5, False)]
    for t, (_, encoded, _) in zip((4, 5), steps, strict=True):
        assert encoded == codec.encode(_step(t))  # as the log's writer gets it
        assert journal.decode(encoded).timestep.observation["count"] == t
