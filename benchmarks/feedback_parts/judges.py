"""The judges of ``benchmarks/feedback.py``: clients of the participant API (docs/feedback.md)
in a child process, so that their work does not delay the players' clients. A judge does
rounds: ``GET /api/play/judge/next``, the item's clips (``.../clips/{c}``, one request each,
as the judging page fetches them; or, the old way, ``.../clips/{c}/frames/{i}`` frame after
frame), ``POST .../answer``; flat out (answering once the clips arrived) or paced (watching
the clips through at the study's fps first, as the page plays them to a person)."""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import time
from typing import Any

from concurrency import STARTUP_TIMEOUT_S, join
from replay_check import cpu_seconds

KINDS = ("next", "clip", "answer", "judgement")  # the calls (and rounds) a judge times
WAYS = {"per_frame": "frames", "one_request": "clip"}  # how a judge fetches a clip


def pick(values: list[float], q: float) -> float | None:
    """The q-quantile (nearest rank) of seconds, in ms; None without values."""
    return round(sorted(values)[int(q * (len(values) - 1))] * 1000, 2) if values else None


async def fetch_clip(client: Any, token: str, c: int, frames: int, way: str) -> int:
    """Clip ``c`` of the item, in one request (``way`` "clip") or frame by frame: the
    requests it took."""
    url = f"/api/play/judge/{token}/clips/{c}"
    for i in range(frames if way == "frames" else 0):
        res = await client.get(f"{url}/frames/{i}")
        if res.status_code != 200 or res.content[:2] != b"\xff\xd8":
            raise RuntimeError(f"frame {c}/{i}: {res.status_code} {res.text[:200]}")
    if way == "frames":
        return frames
    res = await client.get(url)
    sizes = [int(n) for n in res.headers.get("x-frame-sizes", "").split(",") if n]
    if res.status_code != 200 or len(sizes) != frames or sum(sizes) != len(res.content):
        raise RuntimeError(f"clip {c}: {res.status_code} {sizes} {res.text[:200]}")
    return 1


async def judge(url: str, ticket: str, stop: Any, out: dict[str, list[Any]], way: str,
                paced: bool) -> None:  # fmt: skip
    """next → its clips → (paced: watch them through) → answer, until ``stop`` is set; each
    call's (end time, seconds, requests, frames) kept by kind (the monotonic clock is the same
    across processes)."""
    import httpx

    def took(kind: str, t0: float, requests: int = 1, frames: int = 0) -> None:
        out[kind].append((time.monotonic(), time.monotonic() - t0, requests, frames))

    async with httpx.AsyncClient(base_url=url, headers={"X-Play-Ticket": ticket},
                                 timeout=60) as client:  # fmt: skip
        while not stop.is_set():
            t0 = started = time.monotonic()
            res = await client.get("/api/play/judge/next")
            res.raise_for_status()
            took("next", t0)
            item = res.json()["item"]
            if item is None:
                raise RuntimeError(f"no item left: {res.json()['participant']}")
            token, lengths = item["token"], [clip["frames"] for clip in item["clips"]]
            for c, frames in enumerate(lengths):
                t0 = time.monotonic()
                took("clip", t0, await fetch_clip(client, token, c, frames, way), frames)
            if paced:  # the page plays the clips at the study's fps: a person watches them
                await asyncio.sleep(max(lengths) / item["fps"])
            n = len(out["answer"])
            compare = item["question"]["kind"] == "compare"
            body = (
                {"choice": ("left", "right", "equal")[n % 3]} if compare else {"rating": 1 + n % 5}
            )
            t0 = time.monotonic()
            res = await client.post(f"/api/play/judge/{token}/answer", json=body)
            if res.status_code != 200:
                raise RuntimeError(f"answer: {res.status_code} {res.text[:300]}")
            took("answer", t0)
            took("judgement", started, 0)  # the whole round: next, clips, (watching), answer


def judges_process(url: str, tickets: list[str], stop: Any, ready: Any, results: Any, way: str,
                   paced: bool) -> None:  # fmt: skip
    """Child: the judges until ``stop`` (``ready`` set once each has answered once); then
    their calls, or the first error, on ``results``."""
    outs: list[dict[str, list[Any]]] = [{k: [] for k in KINDS} for _ in tickets]

    async def run() -> None:
        async def readiness() -> None:
            while not all(o["answer"] for o in outs) and not stop.is_set():
                await asyncio.sleep(0.02)
            ready.set()

        judges = [judge(url, t, stop, o, way, paced) for t, o in zip(tickets, outs, strict=True)]
        await asyncio.gather(readiness(), *judges)

    try:
        asyncio.run(run())
        results.put({"outs": outs})
    except BaseException as exc:  # reported by the parent
        results.put({"error": repr(exc)})
        ready.set()


class Judges:
    """``n`` new judges of the feedback study, working in a child process while in use,
    fetching clips the ``way`` of :data:`WAYS`, ``paced`` or flat out."""

    def __init__(self, server: dict[str, Any], token: str, n: int, label: str,
                 way: str = "clip", paced: bool = False) -> None:  # fmt: skip
        ctx = multiprocessing.get_context("spawn")
        tickets = [join(server["url"], token, f"judge-{label}-{i}") for i in range(n)]
        self.stop, self.ready, self.results = ctx.Event(), ctx.Event(), ctx.Queue()
        args = (server["url"], tickets, self.stop, self.ready, self.results, way, paced)
        self.proc = ctx.Process(target=judges_process, args=args, daemon=True)
        self.n = n
        self.found: dict[str, Any] = {}
        self.cpu_s = 0.0  # the child's CPU in the windows measured (:meth:`window`)

    async def window(self, seconds: float) -> tuple[float, float]:
        """Let them work for ``seconds``: the window (their CPU in it added to ``cpu_s``)."""
        cpu0, t0 = cpu_seconds(self.proc.pid or 0), time.monotonic()
        await asyncio.sleep(seconds)
        self.cpu_s += cpu_seconds(self.proc.pid or 0) - cpu0
        return t0, time.monotonic()

    async def __aenter__(self) -> Judges:
        self.proc.start()
        if not await asyncio.to_thread(self.ready.wait, STARTUP_TIMEOUT_S):
            raise RuntimeError("the judges did not get going")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        self.found = await asyncio.to_thread(self.results.get, True, 60)
        await asyncio.to_thread(self.proc.join, 30)
        if "error" in self.found:
            raise RuntimeError(f"a judge failed: {self.found['error']}")

    def requests_per_judgement(self) -> float:
        """Requests of a judged item, over every round they finished (not one window's)."""
        outs = self.found["outs"]
        answered = sum(len(o["answer"]) for o in outs)
        ends = [max((c[0] for c in o["judgement"]), default=0.0) for o in outs]
        requests = sum(c[2] for o, end in zip(outs, ends, strict=True)
                       for k in KINDS for c in o[k] if c[0] <= end)  # fmt: skip
        return round(requests / max(1, answered), 2)

    def figures(self, windows: list[tuple[float, float]]) -> dict[str, Any]:
        """Their calls that ended in ``windows``: rates and latencies."""
        seconds = sum(t1 - t0 for t0, t1 in windows)
        found = {kind: [c for o in self.found["outs"] for c in o[kind]
                        if any(t0 <= c[0] <= t1 for t0, t1 in windows)]
                 for kind in KINDS}  # fmt: skip
        answers, rounds = len(found["answer"]), [c[1] for c in found["judgement"]]
        frames = sum(c[3] for c in found["clip"])
        each = 60 / statistics.median(rounds) if rounds else 0.0  # a judge's judgements/min
        return {
            "judges": self.n,
            "judgements": answers,
            "judgements_per_min": round(each * self.n, 1),
            "judgements_per_min_per_judge": round(each, 1),
            "frames_per_s": round(frames / seconds, 1),
            "frames_per_judgement": round(frames / max(1, answers), 1),
            "requests": sum(c[2] for calls in found.values() for c in calls),
            "requests_per_judgement": self.requests_per_judgement(),
            **{f"{k}_ms": {"median": pick([c[1] for c in v], 0.5),
                           "p95": pick([c[1] for c in v], 0.95)} for k, v in found.items()},
            "judges_cpu_cores": round(self.cpu_s / seconds, 3),  # their client work
        }  # fmt: skip
