"""Benchmark: the "auto" rate budget against a real rate limit and against a busy service.

Each run starts its own sandbox process (`python -m haul.sandbox`, so the server does not share
this interpreter) with `--latency-ms` of latency, and prints a table; no assertions.

(a) A real limit, `ratelimit:40` (40 requests per second per org per service, 429 with
    Retry-After and RateLimit-* headers; the part `bare` runs the same with `ratelimit:40:bare`,
    Retry-After alone, as the tracker's undocumented 429s may come, and records its figures
    without a target): a tight read loop
    of `myself` through haul's TrackerClient (16 tasks; its first `--seconds`, from a cold
    start, then the next), and `haul extract` of the org. "used" is answered requests per second over the limit; "refused" the share of
    requests answered 429 (the loop: the sandbox's count less the answers; the extract: the
    429s its log retried).
(b) A busy service: a tight write loop of issue `_import`s through haul's TrackerClient, and
    `haul load` of the extracted org, each with 2% of imports answered 429 at random
    (`429:0.02@*/_import`) against the same on a fresh sandbox without. The ratio of the two
    throughputs is the figure (for the load, of their medians over `--load-runs` each,
    alternating: a 429's second of Retry-After at the end of a ten-second load is a tenth of
    it, so one pair alone varies by that much); all are measured in the same run. The loop runs again with
    no budget to speak of (a fixed one above what it can send): each 429 still holds its
    request for Retry-After (1 s), a cost no budget removes, so that ratio is the ceiling
    of the auto budget's. The loop's figures are its settled part (after `--seconds`).
    `haul load` does better than the loop: a tree waiting out a 429 lends its place to the
    next one (`pipelines.concurrency`).
(c) The tracker's crash test (tests/pipelines/test_crash_resume.py,
    `test_killed_and_resumed_equals_uninterrupted`: its uninterrupted baseline, five kills in
    extract and five in load on a sandbox that drops replies, the comparisons) with 2% of
    imports answered 429 at random, against the same without; each `--crash-runs` times,
    alternating. The figure is the ratio of the median times of the whole test, as the
    done-when words it (within a fifth); the test's function is called as pytest calls it,
    without pytest's own start-up. Beside it, with no target, the same ratio of its migration
    with kills alone: the runs it resumes are under a second each, so a 429 on an issue's
    chain of imports (its attachments go one after another) near the end of one, a second
    of Retry-After, weighs more there.
    The whole test also runs as `pytest tests/pipelines/test_crash_resume.py -k dropped
    -m "slow or not slow" --durations=3` (the `+429s` case is slow-marked).

Each part's figures are recorded for `make bench`'s table (bench/results.py) and printed
one a line as `figure: value (target)`. `--part` runs only the parts named (repeatable).

    .venv/bin/python bench/budget.py [--size small] [--latency-ms 20] [--seconds 15]
        [--part limit|bare|loops|load|crash ...] [--load-runs 3] [--crash-runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import structlog
from harness import sandbox

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.state.store import StagingStore

# the crash test is imported as tests.pipelines.test_crash_resume, from the repository root
sys.path.insert(0, str(Path(__file__).parents[1]))

HAUL = str(Path(sys.executable).parent / "haul")
TOKEN_ENV = "HAUL_BENCH_TOKEN"
LIMIT = 40
NOISE = "429:0.02@*/_import"
WORKERS = 16
PARTS = ("limit", "bare", "loops", "load", "crash")
ISSUE = {"queue": "TEST", "summary": "bench", "createdAt": "2023-01-01", "createdBy": "alice"}


@dataclass
class Figures:
    name: str
    seconds: float
    answered: int  # requests answered other than 429 (the loops), records (haul)
    sent: int  # requests the sandbox saw
    refused: int  # of them answered 429

    @property
    def per_second(self) -> float:
        return self.answered / self.seconds


def served(info: dict[str, Any]) -> int:
    base = info["tracker"].rsplit("/v3", 1)[0]
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}"}
    reply = httpx.get(f"{base}/_sandbox/stats", headers=headers)
    reply.raise_for_status()
    return int(reply.json()["requests"])


async def loop(
    info: dict[str, Any], name: str, seconds: float, *, write: bool, **options: Any
) -> list[Figures]:
    """`WORKERS` tasks reading `myself` (or importing issues into the target) for `seconds`,
    twice over: the first run (the budget finding its rate), then the next (settled)."""
    org = "target" if write else "source"
    tracker = TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"][org], **options
    )
    figures = []
    async with tracker:
        for part in ("first", "next"):
            before, started = served(info), time.monotonic()
            answered = await tasks_for(tracker, seconds, write=write)
            took, sent = time.monotonic() - started, served(info) - before
            label = f"{name}, {part} {seconds:g} s"
            figures.append(Figures(label, took, answered, sent, sent - answered))
    return figures


async def tasks_for(tracker: TrackerClient, seconds: float, *, write: bool) -> int:
    """Requests answered to `WORKERS` tasks sending one after another for `seconds`."""
    answered, started = 0, time.monotonic()

    async def worker() -> None:
        nonlocal answered
        while time.monotonic() - started < seconds:
            await (tracker.import_issue(dict(ISSUE)) if write else tracker.myself())
            answered += 1

    await asyncio.gather(*(worker() for _ in range(WORKERS)))
    return answered


def write_config(directory: Path, info: dict[str, Any]) -> Path:
    return write_sandbox_config(directory, info, SandboxConfig(source_token_env=TOKEN_ENV))


def haul(command: str, config: Path, info: dict[str, Any], name: str) -> Figures:
    """Run `haul COMMAND`; records staged (extract) or loaded (load) and the 429s retried."""
    env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
    log = config.parent / "haul.log"
    lines_before = _lines(log)
    before, started = served(info), time.monotonic()
    result = subprocess.run(
        [HAUL, command, "--config", str(config)],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # a warning for each 429 retried: the log has them
    )
    took = time.monotonic() - started
    if result.returncode not in (0, 3):
        raise SystemExit(f"haul {command} failed with status {result.returncode}")
    with StagingStore.open(config.parent / "haul.db") as store:
        if command == "extract":
            records = sum(n for entity, n in store.count_records().items() if "." not in entity)
        else:
            records = sum(s.get("done", 0) for s in store.ledger.counts().values())
    refused = sum(
        1
        for line in _read(log)[lines_before:]
        if '"http_retry"' in line and json.loads(line).get("reason") == 429
    )
    return Figures(name, took, records, served(info) - before, refused)


def _read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _lines(path: Path) -> int:
    return len(_read(path))


def limit_figures(args: argparse.Namespace, *, bare: bool) -> list[Figures]:
    limit = f"ratelimit:{LIMIT}" + (":bare" if bare else "")
    with sandbox(args.size, args.latency_ms, limit) as info:
        figures = asyncio.run(loop(info, "read loop", args.seconds, write=False))
        workdir = Path(tempfile.mkdtemp(prefix="haul-bench-budget-"))
        try:
            figures.append(haul("extract", write_config(workdir, info), info, "haul extract"))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return figures


def loop_figures(args: argparse.Namespace, faults: str, label: str) -> list[Figures]:
    """The import loop with the "auto" budget and with a fixed one far above what the loop
    can send (what no budget at all would do, the 429s' Retry-After waits still waited),
    each on a sandbox of its own."""
    figures = []
    for budget, options in (("auto", {}), ("no budget", {"write_rate": 100_000})):
        with sandbox(args.size, args.latency_ms, faults) as info:
            name = f"import loop, {budget}, {label}"
            figures += asyncio.run(loop(info, name, args.seconds, write=True, **options))[1:]
    return figures


def load_figures(args: argparse.Namespace, faults: str, label: str) -> Figures:
    """`haul load` of the extracted org into an empty target (a sandbox of its own)."""
    with sandbox(args.size, args.latency_ms, faults) as info:
        workdir = Path(tempfile.mkdtemp(prefix="haul-bench-budget-"))
        try:
            config = write_config(workdir, info)
            haul("extract", config, info, "extract")
            return haul("load", config, info, f"haul load, {label}")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def crash_test_seconds(faults: str) -> tuple[float, float, bool]:
    """The crash test with `faults`, its function called as pytest calls it: the seconds of
    the whole test and of its migration with kills alone, and whether it passed."""
    from tests.pipelines import test_crash_resume as crash  # the repository root is on sys.path

    migrate = crash.migrate_with_kills
    migrating: list[float] = []

    def timed(*args: Any) -> dict[str, int]:
        started = time.monotonic()
        try:
            return migrate(*args)
        finally:
            migrating.append(time.monotonic() - started)

    crash.migrate_with_kills = timed  # the test looks it up when it runs
    try:
        with tempfile.TemporaryDirectory(prefix="haul-bench-crash-") as workdir:
            started = time.monotonic()
            try:
                crash.test_killed_and_resumed_equals_uninterrupted(Path(workdir), faults)
                passed = True
            except AssertionError as failure:
                print(f"    the crash test FAILED with {faults!r}: {failure}")
                passed = False
            took = time.monotonic() - started
            return took, migrating[0] if migrating else float("nan"), passed
    finally:
        crash.migrate_with_kills = migrate


@dataclass
class CrashRuns:
    tests: list[float] = field(default_factory=list)  # seconds of the whole test
    migrations: list[float] = field(default_factory=list)  # of its migration with kills


def crash_figures(runs: int) -> tuple[CrashRuns, CrashRuns, bool]:
    """The crash test's times without and with the 429s, alternating; and whether every run
    passed (the target equal to its source)."""
    from tests.pipelines import test_crash_resume as crash  # the repository root is on sys.path

    clean, noisy = CrashRuns(), CrashRuns()
    passed = True
    for _ in range(runs):
        for times, faults in (
            (clean, crash.DROPPED_IMPORTS),
            (noisy, f"{crash.DROPPED_IMPORTS},{crash.RANDOM_429S}"),
        ):
            test, migration, ok = crash_test_seconds(faults)
            times.tests.append(test)
            times.migrations.append(migration)
            passed = passed and ok
    return clean, noisy, passed


def figure(name: str, value: float, target: str, unit: str, note: str) -> None:
    """Record one figure for `make bench`'s table and print it on a line of its own."""
    from results import record  # bench/ is on sys.path when a bench runs

    record(name, value, target, unit=unit, note=note)
    shown = f"{value:.0f}%" if unit == "%" else f"{value:.2f}{unit}"
    print(f"{name}: {shown}" + (f" ({target}{unit})" if target else ""))


def print_limited(args: argparse.Namespace, limited: list[Figures], *, bare: bool) -> None:
    print(
        f"\n(a) a real limit of {LIMIT} req/s per org "
        f"({'bare 429s' if bare else 'RateLimit-* headers'}); "
        f"{args.size} org, {args.latency_ms:g} ms latency"
    )
    print(f"{'run':<42}{'seconds':>9}{'requests':>10}{'429s':>8}{'used':>8}{'refused':>9}")
    for row in limited:
        print(
            f"{row.name:<42}{row.seconds:>9.1f}{row.sent:>10}{row.refused:>8}"
            f"{used(row):>8.0%}{refused(row):>9.1%}"
        )


def used(row: Figures) -> float:
    return (row.sent - row.refused) / row.seconds / LIMIT


def refused(row: Figures) -> float:
    return row.refused / max(1, row.sent)


def print_noise(pairs: list[tuple[Figures, Figures]]) -> None:
    print("\n(b) 2% of imports answered 429 at random, against none")
    print(f"{'run':<42}{'seconds':>9}{'done':>8}{'per s':>8}{'429s':>7}{'ratio':>8}")
    for without, with_noise in pairs:
        for row in (without, with_noise):
            ratio = row.per_second / without.per_second
            print(
                f"{row.name:<42}{row.seconds:>9.1f}{row.answered:>8}{row.per_second:>8.1f}"
                f"{row.refused:>7}{ratio:>8.0%}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small", help="the sandbox org (haul extract and load)")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=15.0, help="of each tight loop's part")
    parser.add_argument("--part", action="append", choices=PARTS, help="only these parts")
    parser.add_argument(
        "--load-runs",
        type=int,
        default=3,
        help="haul loads of each kind, alternating (an odd count has a median)",
    )
    parser.add_argument(
        "--crash-runs",
        type=int,
        default=5,
        help="crash tests of each kind (an odd count has a median)",
    )
    args = parser.parse_args()
    parts = args.part or PARTS
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))  # errors only
    setting = f"{args.size} org, {args.latency_ms:g} ms"

    for part, bare, targets in (("limit", False, (">= 85", "<= 2")), ("bare", True, ("", ""))):
        if part in parts:
            limited = limit_figures(args, bare=bare)
            print_limited(args, limited, bare=bare)
            extract, said = limited[-1], ", bare 429s" if bare else ""
            figure(f"share of a real limit used{said}", 100 * used(extract), targets[0], "%",
                   setting)  # fmt: skip
            figure(f"refused under a real limit{said}", 100 * refused(extract), targets[1], "%",
                   setting)  # fmt: skip
    if "loops" in parts:
        print_noise(
            list(
                zip(
                    loop_figures(args, "", "no 429s"),
                    loop_figures(args, NOISE, "2% 429s"),
                    strict=True,
                )
            )
        )
    if "load" in parts:  # alternating: a second's Retry-After weighs on a ten-second load
        pairs = [
            (load_figures(args, "", "no 429s"), load_figures(args, NOISE, "2% 429s"))
            for _ in range(args.load_runs)
        ]
        print_noise(pairs)
        clean = statistics.median(pair[0].per_second for pair in pairs)
        noisy = statistics.median(pair[1].per_second for pair in pairs)
        figure("load throughput kept under 2% random 429s", 100 * noisy / clean, ">= 80", "%",
               f"{setting}, medians of {args.load_runs}")  # fmt: skip
    if "crash" in parts:
        clean, noisy, passed = crash_figures(args.crash_runs)
        print("\n(c) the tracker's crash test, seconds (its migration with kills in brackets)")
        print("    without 429s", _seconds(clean))
        print("    with 2% 429s", _seconds(noisy))
        print("    every run passed (target equal to source):", "yes" if passed else "NO")
        note = f"tiny org, medians of {args.crash_runs}" + ("" if passed else "; a run FAILED")
        ratio = statistics.median(noisy.tests) / statistics.median(clean.tests)
        figure("crash test time, 2% random 429s / none", ratio, "<= 1.2", "x", note)
        ratio = statistics.median(noisy.migrations) / statistics.median(clean.migrations)
        figure("its migration with kills alone, 429s / none", ratio, "", "x", note)


def _seconds(runs: CrashRuns) -> str:
    return "  ".join(
        f"{test:.1f} ({migration:.1f})"
        for test, migration in zip(runs.tests, runs.migrations, strict=True)
    )


if __name__ == "__main__":
    main()
