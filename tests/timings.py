"""Where the suite's time goes: each test's wall and CPU seconds, summed per module.

CPU is that of the test process and every process it started (workers, servers, Chromium,
benchmark scripts), read from /proc before and after each test: a test's processes that ended
are counted in their parent's children times. The wall clock says how long a test made the
pass wait; the CPU says how much of the two cores it took, so a test that mostly waits and one
that loads the machine can be told apart (the first can share a core, the second cannot).

``STUDIO_TEST_TIMINGS=FILE`` writes the modules that took 20 s or more, slowest first, with
both figures (``tests/slow_modules.txt`` is such a file; its order is the order the slow
modules start in), and ``FILE.tests`` every test of 2 s or more, those that waited longest
(wall minus CPU) first. Under pytest-xdist the workers measure and the main process writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

SLOW_MODULES = Path(__file__).with_name("slow_modules.txt")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_test_wall: dict[str, float] = {}  # node id → its setup, call and teardown seconds
_test_cpu: dict[str, float] = {}  # node id → its process tree's CPU seconds


def _ticks(pid: int) -> int:
    """utime + stime of ``pid`` and of its children that it waited for."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])  # utime stime cutime cstime


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out.extend(int(c) for c in f.read().split())
    return out


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and all its live descendants."""
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            total += _ticks(pid)
            todo.extend(_children(pid))
        except (OSError, ValueError):  # it ended meanwhile: its parent counts it once reaped
            continue
    return total / _TICK


_BEFORE = pytest.StashKey[float]()
_MEASURED = os.path.isdir("/proc/self/task")


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _MEASURED:
        item.stash[_BEFORE] = tree_cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if call.when == "teardown" and _BEFORE in item.stash:
        # user_properties travel with the report to pytest-xdist's main process
        report = outcome.get_result()  # type: ignore[attr-defined]
        report.user_properties.append(("cpu_s", tree_cpu_seconds() - item.stash[_BEFORE]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _test_wall[report.nodeid] = _test_wall.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        cpu = dict(report.user_properties).get("cpu_s")
        if isinstance(cpu, float):
            _test_cpu[report.nodeid] = cpu


def _per_module(per_test: dict[str, float]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for nodeid, seconds in per_test.items():
        module = nodeid.split("::")[0]
        totals[module] = totals.get(module, 0.0) + seconds
    return totals


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist hands out the tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules listed in ``tests/slow_modules.txt`` (slowest first) run first, the rest in
    their usual order: pytest-xdist hands each worker the next module as it frees up, so a
    long module started last would leave one core idle while the other finishes it. Only
    the order changes; every test still runs."""
    if not SLOW_MODULES.exists():
        return
    listed = [line.split()[0] for line in SLOW_MODULES.read_text().splitlines()
              if line.strip() and not line.startswith("#")]  # fmt: skip
    rank = {name: i for i, name in enumerate(listed)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The pass's test seconds and CPU seconds, and the ten modules with the most wall time."""
    if not _test_wall:
        return
    wall, cpu = sum(_test_wall.values()), sum(_test_cpu.values())
    module_wall, module_cpu = _per_module(_test_wall), _per_module(_test_cpu)
    tr = terminalreporter
    tr.write_sep("=", f"test time {wall:.0f} s, CPU {cpu:.0f} s (the process trees of the tests)")
    for module, seconds in sorted(module_wall.items(), key=lambda kv: -kv[1])[:10]:
        tr.write_line(f"{seconds:7.1f} s wall {module_cpu.get(module, 0.0):7.1f} s CPU  {module}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("STUDIO_TEST_TIMINGS")
    if not out or hasattr(session.config, "workerinput"):
        return
    module_wall, module_cpu = _per_module(_test_wall), _per_module(_test_cpu)
    slow = sorted(((s, m) for m, s in module_wall.items() if s >= 20), reverse=True)
    lines = [f"{module} {wall:.0f} {module_cpu.get(module, 0.0):.0f}" for wall, module in slow]
    header = "# slowest test modules first: wall and CPU seconds in one run (tests/timings.py)"
    Path(out).write_text("\n".join([header, *lines]) + "\n")
    # and every test of 2 s or more, with the seconds it waited (wall minus CPU) first
    tests = [(w - _test_cpu.get(t, 0.0), w, t) for t, w in _test_wall.items() if w >= 2]
    rows = [f"{t} {w:.1f} {_test_cpu.get(t, 0.0):.1f}" for _, w, t in sorted(tests, reverse=True)]
    head = "# tests of 2 s or more, those that waited longest first: wall and CPU seconds"
    Path(out + ".tests").write_text("\n".join([head, *rows]) + "\n")
