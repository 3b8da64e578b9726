"""Benchmark: how much of a real rate limit haul uses, against a sequential client under the
same limit, and how fast the read budget starts.

(a) A real limit, `ratelimit:40` (40 requests per second per org per service: a token bucket
    with a fifth of a second of burst, 429 with Retry-After and RateLimit-* headers), at each
    `--latency-ms` (20 and 100 by default), one sandbox process each. In this process, one
    after the other for `--seconds` each: a **sequential client** (plain httpx, one request
    after another, a 429 waited out for its Retry-After, as the vendor's SDK and most scripts
    do), then haul's TrackerClient read loop (`WORKERS` tasks reading `myself`, an "auto" read
    budget from a cold start). "used" is replies other than 429 per second over the limit;
    "refused" the share of requests answered 429. The figures: haul's used and refused, and
    haul's used over the sequential client's (never below it).
(b) The read budget's first seconds on a service without a limit (`--latency-ms` 20): the
    read loop from a cold start, then again from where the first left it (the learned rate
    kept in a staging store, as a command keeps it between runs). The figure: the first
    second's requests per second over the settled rate (the last seconds of the cold run),
    cold and remembered (the settled rate: the median second of the cold run after its
    first two; a loaded machine moves it by a third from one second to the next).

Each figure is recorded for `make bench`'s table (bench/results.py) and printed one a line.

    .venv/bin/python bench/pacing.py [--seconds 10] [--latency-ms 20 --latency-ms 100]
        [--part limit|start ...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import structlog
from harness import sandbox
from results import record

from haul.connectors.retrying import parse_retry_after
from haul.connectors.tracker import TrackerClient
from haul.state.store import StagingStore

LIMIT = 40
WORKERS = 16
START_WORKERS = 64  # enough in flight that the budget, not the caller, binds at first
PARTS = ("limit", "start")


@dataclass(frozen=True)
class Figures:
    name: str
    seconds: float
    answered: int
    refused: int

    @property
    def used(self) -> float:
        return self.answered / self.seconds / LIMIT

    @property
    def refused_share(self) -> float:
        return self.refused / max(1, self.answered + self.refused)


async def sequential(info: dict[str, Any], seconds: float) -> Figures:
    """One request after another, each 429 waited out for its Retry-After (1 s without)."""
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    answered = refused = 0
    async with httpx.AsyncClient(base_url=info["tracker"], headers=headers) as client:
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            reply = await client.get("/myself")
            if reply.status_code != 429:
                reply.raise_for_status()
                answered += 1
                continue
            refused += 1
            await asyncio.sleep(parse_retry_after(reply.headers.get("Retry-After"), now) or 1.0)
        return Figures("sequential client", time.monotonic() - started, answered, refused)


def now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def tracker_for(info: dict[str, Any]) -> TrackerClient:
    return TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"]["source"]
    )


async def read_loop(
    tracker: TrackerClient, seconds: float, workers: int, ticks: list[float] | None = None
) -> tuple[float, int]:
    """`workers` tasks reading `myself` for `seconds`: (seconds taken, requests answered);
    `ticks` gets each answer's time since the start."""
    answered, started = 0, time.monotonic()

    async def worker() -> None:
        nonlocal answered
        while time.monotonic() - started < seconds:
            await tracker.myself()
            answered += 1
            if ticks is not None:
                ticks.append(time.monotonic() - started)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return time.monotonic() - started, answered


async def haul_loop(info: dict[str, Any], seconds: float) -> Figures:
    tracker = tracker_for(info)
    async with tracker:
        retries = tracker.core.retries  # the probe in `connect` is not counted
        took, answered = await read_loop(tracker, seconds, WORKERS)
        return Figures("haul read loop", took, answered, tracker.core.retries - retries)


def limit_part(args: argparse.Namespace) -> None:
    for latency in args.latency_ms:
        with sandbox("tiny", latency, f"ratelimit:{LIMIT}") as info:
            baseline = asyncio.run(sequential(info, args.seconds))
            time.sleep(1.0)  # the sandbox's bucket full again
            haul = asyncio.run(haul_loop(info, args.seconds))
        print(f"\n(a) a real limit of {LIMIT} req/s, {latency:g} ms latency")
        print(f"{'client':<20}{'seconds':>9}{'answered':>10}{'429s':>7}{'used':>7}{'refused':>9}")
        for row in (baseline, haul):
            print(
                f"{row.name:<20}{row.seconds:>9.1f}{row.answered:>10}{row.refused:>7}"
                f"{row.used:>7.0%}{row.refused_share:>9.1%}"
            )
        setting = f"{latency:g} ms, {args.seconds:g} s from a cold start"
        figure(f"share of a real limit used, {latency:g} ms", 100 * haul.used, ">= 97", "%",
               setting)  # fmt: skip
        figure(f"refused under a real limit, {latency:g} ms", 100 * haul.refused_share,
               "<= 1", "%", setting)  # fmt: skip
        figure(f"haul / sequential client under one limit, {latency:g} ms",
               haul.used / baseline.used, ">= 1", "x",
               f"{setting}; sequential {baseline.used:.0%} used")  # fmt: skip


def per_second(ticks: list[float], second: int) -> int:
    return sum(1 for t in ticks if second <= t < second + 1)


def rates_by_second(history: list[tuple[float, float]], seconds: int) -> list[int]:
    """The budget's rate in force at the end of each whole second since it was made."""
    made = history[0][0]
    return [
        round([rate for at, rate in history if at <= made + second + 1][-1])
        for second in range(seconds)
    ]


def start_part(args: argparse.Namespace) -> None:
    seconds = max(5.0, args.seconds)
    with sandbox("tiny", 20.0) as info, tempfile.TemporaryDirectory() as folder:
        cold: list[float] = []
        rates: dict[str, list[tuple[float, float]]] = {}
        tracker = tracker_for(info)

        async def first() -> None:
            async with tracker:
                await read_loop(tracker, seconds, START_WORKERS, cold)
                rates["cold"] = tracker.core.rate_history()["read"]
                core = tracker.core
                with StagingStore.open(Path(folder) / "haul.db") as store:
                    store.budgets.remember(core.base_url, core.org_id, core.found_budgets())

        asyncio.run(first())
        warm: list[float] = []
        again = tracker_for(info)

        async def second() -> None:
            async with again:
                core = again.core
                with StagingStore.open(Path(folder) / "haul.db") as store:
                    core.resume_budgets(store.budgets.recalled(core.base_url, core.org_id))
                await read_loop(again, seconds, START_WORKERS, warm)
                rates["warm"] = again.core.rate_history()["read"]

        asyncio.run(second())
    whole = int(seconds)
    settled = statistics.median(per_second(cold, s) for s in range(2, whole))
    print(f"\n(b) the read budget's first seconds, no limit, 20 ms, {START_WORKERS} tasks")
    print("requests per second, second by second; settled:", round(settled))
    print("    cold start  ", [per_second(cold, s) for s in range(whole)])
    print("    remembered  ", [per_second(warm, s) for s in range(whole)])
    print("the read budget's rate at the end of each second")
    print("    cold start  ", rates_by_second(rates["cold"], whole))
    print("    remembered  ", rates_by_second(rates["warm"], whole))
    note = f"20 ms, {START_WORKERS} tasks; settled {settled:.0f}/s"
    figure("read budget's first second / settled, cold start", 100 * per_second(cold, 0) /
           settled, "", "%", note)  # fmt: skip
    figure("read budget's first second / settled, remembered", 100 * per_second(warm, 0) /
           settled, ">= 80", "%", note)  # fmt: skip


def figure(name: str, value: float, target: str, unit: str, note: str) -> None:
    """Record one figure for `make bench`'s table and print it on a line of its own."""
    record(name, value, target, unit=unit, note=note)
    shown = f"{value:.0f}%" if unit == "%" else f"{value:.2f}{unit}"
    print(f"{name}: {shown}" + (f" ({target}{unit})" if target else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="of each client's run")
    parser.add_argument("--latency-ms", type=float, action="append")
    parser.add_argument("--part", action="append", choices=PARTS, help="only these parts")
    args = parser.parse_args()
    args.latency_ms = args.latency_ms or [20.0, 100.0]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))  # errors only
    parts = args.part or PARTS
    if "limit" in parts:
        limit_part(args)
    if "start" in parts:
        start_part(args)


if __name__ == "__main__":
    main()
