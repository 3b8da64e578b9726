"""Benchmark: what N processes (a sharded run's parts) get from one service under a limit
kept per token, with a token each, and with one token shared through a budget file.

One sandbox process (`haul sandbox serve`, `--latency-ms` on every request) limits each token
to `--limit` reads per second on the tracker (`ratelimit:LIMIT:reads:per=token`). Each part is
a plain process of its own (this script with `--worker`) running a read loop through haul's
TrackerClient (`WORKERS` tasks reading `myself`, an "auto" read budget, as a config's default
is) for `--seconds`, all parts starting at one instant. The figures with targets are those
of the run once settled (after its first `--settle` seconds, when the budgets have found the
limit, as a long sharded run is nearly all of the time); the refusals over the whole run,
that first search included, are printed and recorded beside them.

- own tokens: 1, 2 and 4 parts, each with a token of its own (the sandbox's admin has four).
  The figure: the parts' answers per second together over N times one part's (target 0.8).
- one token: 2 and 4 parts sharing the admin's token through `[tuning] shared_budget` (a file
  every part names). The figures: what they got through together as a share of the limit
  (target 0.85), and the share of their requests answered 429 (target at most 3%); and,
  without a target, that share over the whole run. Beside them, without a target: 4 parts of
  one token, each with a budget of its own (no file), to show what the file buys.

Each figure is recorded for `make bench`'s table (bench/results.py) and printed one a line.

    .venv/bin/python bench/shared_budget.py [--limit 20] [--seconds 15] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import sandbox
from results import record

from haul.connectors.tracker import TrackerClient

WORKERS = 16
PART_ENV = "HAUL_BENCH_PART"
START_AFTER = 4.0  # seconds from launching the parts to their common start: imports, connects


@dataclass(frozen=True)
class Part:
    """One part's run, settled (from `--settle` seconds after the start to the end): replies
    other than 429, requests sent, seconds; and the same counts over the whole run."""

    answered: int
    sent: int
    seconds: float
    answered_all: int
    sent_all: int
    seconds_all: float


@dataclass(frozen=True)
class Run:
    name: str
    parts: list[Part]

    @property
    def per_second(self) -> float:
        """The parts' answers per second together, settled (each over its own time)."""
        return sum(part.answered / part.seconds for part in self.parts)

    @property
    def refused(self) -> float:
        """The share of the parts' requests answered 429, settled."""
        sent = sum(part.sent for part in self.parts)
        return (sent - sum(part.answered for part in self.parts)) / sent

    @property
    def refused_all(self) -> float:
        """The same over the whole run, the budgets' first search for the limit included."""
        sent = sum(part.sent_all for part in self.parts)
        return (sent - sum(part.answered_all for part in self.parts)) / sent


async def read_loop(job: dict[str, Any]) -> Part:
    """`WORKERS` tasks reading `myself` from the job's `start` (wall clock) for `seconds`;
    counted whole and from `settle` seconds on."""
    info, seconds, settle = job["info"], job["seconds"], job["settle"]
    tracker = TrackerClient.connect(
        base_url=info["tracker"],
        token=info["tokens"][job["token"]],
        org_id=info["orgs"]["source"],
        read_rate="auto",
        shared_budget=job["shared"],
    )
    answered = 0
    async with tracker:
        await asyncio.sleep(max(0.0, job["start"] - time.time()))
        began = time.monotonic()

        async def worker() -> None:
            nonlocal answered
            while time.monotonic() - began < seconds:
                await tracker.myself()
                answered += 1

        def sent() -> int:
            """Requests answered, and those refused (each 429 is retried: the only faults)."""
            return answered + tracker.core.retries

        async def settled() -> tuple[int, int, float]:
            await asyncio.sleep(settle)
            return answered, sent(), time.monotonic()

        mark = asyncio.create_task(settled())
        await asyncio.gather(*(worker() for _ in range(WORKERS)))
        ended = time.monotonic()
        at_answered, at_sent, at = await mark
        return Part(
            answered - at_answered, sent() - at_sent, ended - at, answered, sent(), ended - began
        )


def run_parts(
    name: str, info: dict[str, Any], tokens: list[str], shared: str | None, args: Any
) -> Run:
    """One process per token in `tokens`, all starting together; their figures."""
    job = {"info": info, "shared": shared, "start": time.time() + START_AFTER}
    job.update(seconds=args.seconds, settle=args.settle)
    processes = [
        subprocess.Popen(  # the job in the environment: no token on a command line
            [sys.executable, __file__, "--worker"],
            env={**os.environ, PART_ENV: json.dumps({**job, "token": token})},
            stdout=subprocess.PIPE,
            text=True,
        )
        for token in tokens
    ]
    parts = []
    for process in processes:
        out, _ = process.communicate(timeout=args.seconds + START_AFTER + 120)
        if process.returncode != 0:
            raise SystemExit(f"{name}: a part failed with status {process.returncode}")
        parts.append(Part(**json.loads(out.strip().splitlines()[-1])))
    run = Run(name, parts)
    each = ", ".join(f"{part.answered / part.seconds:.1f}/s" for part in parts)
    print(
        f"{name}: {run.per_second:.1f} answers/s together ({each}), {run.refused:.1%} "
        f"refused; over the whole run, the first {args.settle:g} s included: "
        f"{run.refused_all:.1%} refused",
        flush=True,
    )
    return run


def own_tokens(count: int) -> list[str]:
    return ["admin", *(f"admin_{number}" for number in range(2, count + 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # one part: its job in PART_ENV, its figures on the last line of stdout
        print(json.dumps(asyncio.run(read_loop(json.loads(os.environ[PART_ENV]))).__dict__))
        return
    limit = args.limit
    faults = f"ratelimit:{limit:g}:reads:per=token"
    note = (
        f"ratelimit {limit:g}/s per token, {args.seconds:g} s less the first {args.settle:g}, "
        f"{args.latency_ms:g} ms"
    )
    with sandbox("tiny", args.latency_ms, faults) as info, tempfile.TemporaryDirectory() as tmp:
        one = run_parts("1 part, its own token", info, own_tokens(1), None, args)
        for count in (2, 4):
            run = run_parts(f"{count} parts, own tokens", info, own_tokens(count), None, args)
            ratio = run.per_second / (count * one.per_second)
            shown = record(
                f"shards: {count} parts with own tokens / {count} x one", ratio, ">= 0.8", note=note
            )
            print(f"{shown.name}: {ratio:.2f} (>= 0.8)")
        for count in (2, 4):
            budget = str(Path(tmp) / f"budget-{count}.json")
            run = run_parts(
                f"{count} parts, one shared token", info, ["admin"] * count, budget, args
            )
            used = record(
                f"shards: {count} parts sharing a token, share of the limit",
                run.per_second / limit,
                ">= 0.85",
                unit="share",
                note=note,
            )
            refused = record(
                f"shards: {count} parts sharing a token, refused",
                run.refused,
                "<= 0.03",
                unit="share",
                note=note,
            )
            record(
                f"shards: {count} parts sharing a token, refused, first {args.settle:g} s in",
                run.refused_all,
                unit="share",
                note=note,
            )
            print(f"{used.name}: {used.value:.2f} (>= 0.85)")
            print(f"{refused.name}: {refused.value:.3f} (<= 0.03)")
        alone = run_parts("4 parts, one token, no file", info, ["admin"] * 4, None, args)
        print(
            f"without the file: {alone.per_second / limit:.2f} of the limit, "
            f"{alone.refused:.1%} refused"
        )
        record(
            "shards: 4 parts of one token without the file, refused",
            alone.refused,
            unit="share",
            note=note,
        )


if __name__ == "__main__":
    main()
