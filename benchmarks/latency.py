"""Input-to-frame-drawn latency of the real player page in headless Chromium.

Starts the app (its own process, see ``concurrency.py``), joins a study as a participant in
Debian's Chromium through Playwright, and plays Atari Pong with the keyboard: in sync mode
(one step per key press, a press every 60 ms) and in async mode at 60 fps (a key change
every ~60 ms). Paced by timers on purpose: Playwright's ``wait_for_function`` polls with
``requestAnimationFrame``, which keeps the page painting and delays every frame that
answers a key press until the next paint (docs/performance.md). Latency per input is
measured from the episode's own envlogger log: ``frame_drawn - input_sent`` of the step that
applied the input, both on the browser's clock (exactly what the recording holds). Prints
JSON (milliseconds). ``--smoke`` plays 4 inputs in each mode: it checks that the benchmark
still runs (``make test``), its figures mean nothing.

    .venv/bin/python benchmarks/latency.py [--inputs 150] [--smoke]
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from concurrency import PONG, studio_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]  # fmt: skip


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile, or None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))], 2)


STAGES = (  # (name, from, to): consecutive timestamps the log holds for a step
    ("client_to_server", "input_sent", "input_recv"),
    ("server_to_applied", "input_recv", "applied"),
    ("applied_to_frame_sent", "applied", "frame_sent"),
    ("frame_sent_to_drawn", "frame_sent", "frame_drawn"),
)


def timings_from_log(path: str) -> dict[int, dict[str, float]]:
    """Per step that applied a fresh input: its timestamps, and the sending and drawing of
    the first frame drawn from that step on (the page skips a frame that a newer one
    overtook, with lanes, and the adaptive stream may not send every step's frame)."""
    from server.recording.writer import open_reader

    steps: dict[int, dict[str, float]] = {}
    acks: dict[int, tuple[float, float]] = {}
    with open_reader(path) as reader:
        for index, step in enumerate(reader.steps):
            timing = json.loads(step.custom_data["timing"])
            if "input_sent" in timing:
                steps[index] = {k: timing[k] for k in ("input_sent", "input_recv", "applied")
                                if timing.get(k) is not None}  # fmt: skip
            for ack in timing.get("acks", []):
                if ack[1] is not None and ack[2] is not None:
                    acks[int(ack[0])] = (ack[1], ack[2])
    drawn = sorted(acks)
    for index, times in steps.items():
        at = bisect.bisect_left(drawn, index)
        if at < len(drawn):
            times["frame_sent"], times["frame_drawn"] = acks[drawn[at]]
    return steps


def latencies(timings: dict[int, dict[str, float]]) -> list[float]:
    """frame_drawn - input_sent for each step that applied a fresh input (``timings``: from
    :func:`timings_from_log`)."""
    return [t["frame_drawn"] - t["input_sent"] for t in timings.values() if "frame_drawn" in t]


def stages_of(times: dict[str, float]) -> dict[str, float]:
    """One input's stages (:data:`STAGES`) that its timestamps give, in ms."""
    return {name: times[b] - times[a] for name, a, b in STAGES if a in times and b in times}


def stage_medians(timings: dict[int, dict[str, float]]) -> dict[str, float | None]:
    """Median of each stage of input → frame drawn (client and server share one clock here)."""
    each = [stages_of(t) for t in timings.values()]
    return {name: percentile([s[name] for s in each if name in s], 50) for name, _, _ in STAGES}


def play(page: Any, url: str, token: str, mode: str, inputs: int,
         participant: str | None = None) -> None:  # fmt: skip
    """Join as ``participant``, pass the instructions and the ready gate, play ``inputs``
    inputs with the keyboard, cancel the episode (as a participant would, through the page)."""
    from playwright.sync_api import expect

    page.goto(f"{url}/player.html?token={token}")
    page.get_by_label("Participant ID").fill(participant or f"latency-{mode}")
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#instructions-view")).to_be_visible()
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Play Pong").click()
    expect(page.locator("#st-phase")).to_have_text("ready")
    page.locator("#screen").focus()
    page.keyboard.press("Enter")  # the ready gate
    expect(page.locator("#st-phase")).to_have_text("playing")
    if mode == "sync":
        for i in range(1, inputs + 1):
            page.keyboard.press("ArrowUp" if i % 2 else "ArrowDown")
            page.wait_for_timeout(60)
        # (a function, not an expression string: the page's CSP forbids eval)
        page.wait_for_function(
            "n => Number(document.getElementById('st-step').textContent) >= n", arg=inputs
        )
    else:
        for i in range(inputs // 2):
            key = "ArrowUp" if i % 2 else "ArrowDown"
            page.keyboard.down(key)
            page.wait_for_timeout(60)
            page.keyboard.up(key)
            page.wait_for_timeout(60)
    page.keyboard.press("Delete")  # the player asks first (the game pauses): Enter confirms
    expect(page.locator("#cancel-yes")).to_be_enabled()  # once the question's guard is over
    page.keyboard.press("Enter")
    # (a narrow link may still hold seconds of frames ahead of the answer)
    expect(page.locator("#after-save-text")).to_contain_text("canceled", timeout=30_000)


def measure(browser: Any, mode: str, inputs: int) -> dict[str, Any]:
    """One server, one episode in ``mode``; latency figures from its log and its row."""
    from sqlalchemy import create_engine, text

    env = {**PONG, "mode": mode}
    with studio_server(env) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(30_000)
        started = time.monotonic()
        play(page, server["url"], server["token"], mode, inputs)
        elapsed = time.monotonic() - started
        context.close()
        engine = create_engine(server["database_url"])
        with engine.connect() as conn:
            row = conn.execute(text("SELECT storage_path, steps, latency_p50_ms, latency_p95_ms, "
                                    "frames_dropped FROM episodes")).one()  # fmt: skip
        engine.dispose()
        timings = timings_from_log(row.storage_path)
        values, stages = latencies(timings), stage_medians(timings)
    return {
        "mode": mode if mode == "sync" else "async_60fps",
        "inputs_measured": len(values),
        "steps": row.steps,
        "p50_ms": percentile(values, 50),
        "p99_ms": percentile(values, 99),
        "max_ms": round(max(values), 2) if values else None,
        "stages_p50_ms": stages,
        "db_p50_ms": row.latency_p50_ms and round(row.latency_p50_ms, 2),
        "db_p95_ms": row.latency_p95_ms and round(row.latency_p95_ms, 2),
        "frames_dropped": row.frames_dropped,
        "seconds": round(elapsed, 1),
    }


def in_chromium(work: Any) -> Any:
    """``work(browser)`` in Debian's headless Chromium, closed afterwards; its result."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            return work(browser)
        finally:
            browser.close()


def main() -> None:
    """Measure both modes and print JSON."""

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=150)
    parser.add_argument("--smoke", action="store_true", help="4 inputs: does it still run?")
    args = parser.parse_args()
    if args.smoke:
        args.inputs = 4
    results = in_chromium(lambda b: [measure(b, mode, args.inputs) for mode in ("sync", "async")])
    print(json.dumps({"benchmark": "player_latency", "env": "ALE/Pong-v5, headless Chromium",
                      "results": results, "smoke": args.smoke}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
