"""Benchmark: how cost grows with the work, on one large org migrated in one run.

`haul extract` then `haul load` move the sandbox's `--size` org (default `large`, 100 000
issues) with the default config and the changelog staged (the analysts' export needs it);
then `haul export --format parquet` writes that store's tables, `haul.duckdb` and `flow.html`
with `issue_daily` whole (no `[model] daily_since`). Each command is a child process; its
peak RSS is the kernel's accounting of that child alone (`os.wait4`).

Time per 1 000 issues in the first and the last tenth of a stage is read from haul's own
timestamps in the store, after the command ended (nothing polls the store while it runs):
when each issue was drained by the extract (its comments, files and changelog fetched,
`drained.drained_at`) and when its ledger row was settled by the load (`ledger.updated_at`).
The first tenth is the span from the first issue to the one a tenth in, the last from nine
tenths in to the last: both are of the steady work, neither holds the start-up. The store's
bytes per issue are those of its SQLite file (its blobs folder is in the note).

    .venv/bin/python bench/growth.py [--size large] [--max-seconds S] [--work DIR] [--no-export]
    .venv/bin/python bench/growth.py --export-only --work DIR   # again, of the store left there

`--max-seconds` bounds each command (SIGTERM, which haul handles like Ctrl-C): a stage
stopped early still gets its tenths, of the issues it finished, and its note says so.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from results import record

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config

HAUL = str(Path(sys.executable).parent / "haul")
TOKEN_ENV = "HAUL_BENCH_TOKEN"
GROWTH_TARGET = "<= 1.15"  # the last tenth within 15% of the first
STAGE_RSS_TARGET = "<= 300"  # MB, extract and load
EXPORT_RSS_TARGET = "<= 1500"  # MB, the analysts' export
# when each issue's work ended, by stage: haul's own timestamps in the store
FINISHED = {
    "extract": "SELECT drained_at FROM drained WHERE entity = 'issue'",
    "load": "SELECT updated_at FROM ledger WHERE entity = 'issue' AND status IN ('done', 'failed')",
}


@dataclass(frozen=True)
class Tenths:
    """Seconds per 1 000 issues in the first and the last tenth of a stage's issues."""

    issues: int
    first_per_1000: float
    last_per_1000: float

    @property
    def growth(self) -> float:
        """The last tenth's time over the first's (1.0: no slower at the end)."""
        return self.last_per_1000 / self.first_per_1000 if self.first_per_1000 > 0 else 0.0


def tenths(finished: Sequence[float]) -> Tenths:
    """The first and the last tenth of `finished` (when each issue's work ended, in seconds,
    any order), each as seconds per 1 000 issues. Each tenth spans the same number of issues:
    from the first to the one a tenth in, and from nine tenths in to the last. ValueError
    under 20 issues (a tenth of fewer than two spans nothing)."""
    stamps = sorted(finished)
    step = len(stamps) // 10
    if step < 2:
        raise ValueError(f"{len(stamps)} issues: a tenth needs at least 2, so 20 in all")
    first = stamps[step] - stamps[0]
    last = stamps[-1] - stamps[-1 - step]
    return Tenths(len(stamps), first * 1000 / step, last * 1000 / step)


def parse_instant(text: str) -> float:
    """A store timestamp ('2026-12-04T00:40:06.732+00:00') as seconds since the epoch."""
    return datetime.fromisoformat(text).timestamp()


def finished_times(store: Path, stage: str) -> list[float]:
    """When each issue's work of `stage` ended, read from the store (read-only)."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return [parse_instant(text) for (text,) in db.execute(FINISHED[stage])]
    finally:
        db.close()


@dataclass(frozen=True)
class Run:
    """One haul command's wall seconds, peak RSS (MB), exit status, whether it was stopped,
    and the machine's load averages (1 min) sampled while it ran."""

    seconds: float
    peak_mb: float
    status: int
    stopped: bool
    loads: tuple[float, ...]

    def note(self) -> str:
        load = f"load avg {min(self.loads):.1f}-{max(self.loads):.1f}" if self.loads else ""
        ended = "stopped early" if self.stopped else f"exit {self.status}"
        return f"{ended}, {self.seconds:.0f} s, {load}".rstrip(", ")


def run(command: list[str], env: dict[str, str], log: Path, max_seconds: float | None) -> Run:
    """Run `command` (its output to `log`; SIGTERM after `max_seconds`)."""
    started = time.monotonic()
    loads: list[float] = []
    with log.open("ab") as out:
        child = subprocess.Popen(command, env=env, stdout=out, stderr=out)
    done = threading.Event()

    def watch() -> None:  # the load average every 30 s, and the stop when it is due
        while not done.wait(30.0):
            loads.append(os.getloadavg()[0])
            due = max_seconds is not None and time.monotonic() - started > max_seconds
            if due and not stopped.is_set():
                child.send_signal(signal.SIGTERM)
                stopped.set()

    stopped = threading.Event()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, status, usage = os.wait4(child.pid, 0)
    done.set()
    watcher.join()
    loads.append(os.getloadavg()[0])
    seconds = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    return Run(seconds, usage.ru_maxrss / 1024, code, stopped.is_set(), tuple(loads))


def migrate(size: str, work: Path, max_seconds: float | None, exported: bool = True) -> None:
    serve = subprocess.Popen(
        [HAUL, "sandbox", "serve", "--size", size, "--seed", "1"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert serve.stdout is not None
        info: dict[str, Any] = json.loads(serve.stdout.readline())
        options = SandboxConfig(
            source_token_env=TOKEN_ENV, queue_mapping={}, scope_extra={"changelog": True}
        )
        config = write_sandbox_config(work, info, options)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        for stage in ("extract", "load"):
            ran = run([HAUL, stage, "--config", str(config)], env, work / "bench.log", max_seconds)
            say(f"{size}: haul {stage}: {ran.note()}, peak {ran.peak_mb:.0f} MB")
            report_stage(size, stage, work / "haul.db", ran)
        report_store(size, work / "haul.db")
        if exported:
            export(size, config, env, max_seconds)
    finally:
        serve.terminate()
        serve.wait(30)


def report_stage(size: str, stage: str, store: Path, ran: Run) -> None:
    record(f"peak RSS, haul {stage}, {size} org", ran.peak_mb, STAGE_RSS_TARGET, unit="MB",
           note=ran.note())  # fmt: skip
    try:
        found = tenths(finished_times(store, stage))
    except ValueError as exc:
        say(f"{size}: haul {stage}: no tenths: {exc}")
        return
    say(f"{size}: haul {stage}: {found.issues} issues, s per 1000: first tenth "
        f"{found.first_per_1000:.1f}, last tenth {found.last_per_1000:.1f}")  # fmt: skip
    per = f"{found.issues} issues; s per 1 000 issues"
    note = f"{per}: first tenth {found.first_per_1000:.1f}, last {found.last_per_1000:.1f}"
    if ran.stopped:
        note += " (stopped early: tenths of the issues it finished)"
    record(f"haul {stage}, {size} org: last tenth / first (time per 1 000 issues)",
           found.growth, GROWTH_TARGET, note=note)  # fmt: skip
    record(f"haul {stage}, {size} org: s per 1 000 issues, first tenth", found.first_per_1000,
           unit="s")  # fmt: skip
    record(f"haul {stage}, {size} org: s per 1 000 issues, last tenth", found.last_per_1000,
           unit="s")  # fmt: skip


def report_store(size: str, store: Path) -> None:
    issues = len(finished_times(store, "extract"))
    if not issues:
        return
    files = [store, store.with_name(store.name + "-wal")]
    sqlite_bytes = sum(path.stat().st_size for path in files if path.exists())
    blobs = store.with_name(store.name + ".blobs")
    blob_bytes = sum(p.stat().st_size for p in blobs.rglob("*") if p.is_file())
    say(f"{size}: store {sqlite_bytes / 1e6:.0f} MB ({sqlite_bytes / issues:.0f} B per issue), "
        f"blobs {blob_bytes / 1e6:.0f} MB")  # fmt: skip
    record(f"staging store, {size} org: bytes per issue", sqlite_bytes / issues, unit="B",
           note=f"{issues} issues, {sqlite_bytes / 1e6:.0f} MB; "
           f"blobs beside it {blob_bytes / 1e6:.0f} MB")  # fmt: skip


def export(size: str, config: Path, env: dict[str, str], max_seconds: float | None) -> None:
    """The analysts' export of the store `config` names: Parquet, `haul.duckdb`, `flow.html`."""
    work = config.parent
    out = work / "exports"
    command = [HAUL, "export", "--config", str(config), "--format", "parquet", "--out", str(out)]
    ran = run(command, env, work / "bench.log", max_seconds)
    if ran.status != 0 and not ran.stopped:  # failed, or ended from outside: no figure of it
        say(f"{size}: haul export: {ran.note()}: nothing recorded (see bench.log)")
        return
    folder = out / "latest"
    daily = 0
    if (folder / "manifest.json").is_file():
        files = json.loads((folder / "manifest.json").read_text())["files"]
        daily = sum(entry["rows"] for entry in files if entry["table"] == "issue_daily")
    duck = folder / "haul.duckdb"
    duck_bytes = duck.stat().st_size if duck.is_file() else 0
    flow = "flow.html written" if (folder / "flow.html").is_file() else "no flow.html"
    say(f"{size}: haul export: {ran.note()}, peak {ran.peak_mb:.0f} MB, issue_daily {daily} rows, "
        f"haul.duckdb {duck_bytes / 1e6:.0f} MB, {flow}")  # fmt: skip
    note = f"{ran.note()}; issue_daily {daily} rows, whole; {flow}"
    record(f"peak RSS, haul export (parquet, haul.duckdb, flow.html), {size} org", ran.peak_mb,
           EXPORT_RSS_TARGET, unit="MB", note=note)  # fmt: skip
    issues = len(finished_times(work / "haul.db", "extract"))
    if issues:
        record(f"haul export, {size} org: s per 1 000 issues", ran.seconds * 1000 / issues,
               unit="s", note=f"{issues} issues; haul.duckdb {duck_bytes / issues:.0f} B "
               "per issue")  # fmt: skip


def say(line: str) -> None:
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", default="large", help="the sandbox org (tiny .. large)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop each command after this long")  # fmt: skip
    parser.add_argument("--work", type=Path, default=None,
                        help="the folder for the store and exports (default: a new temporary one)")  # fmt: skip
    parser.add_argument("--export-only", action="store_true",
                        help="only the export, of the store an earlier run left in --work")  # fmt: skip
    parser.add_argument("--no-export", action="store_true",
                        help="stop after extract and load (the export can follow with --export-only)")  # fmt: skip
    args = parser.parse_args()
    if args.export_only:
        if args.work is None:
            parser.error("--export-only needs --work, the folder of an earlier run")
        export(args.size, args.work / "haul.toml", {**os.environ}, args.max_seconds)
        return
    work = args.work or Path(tempfile.mkdtemp(prefix=f"haul-growth-{args.size}-"))
    work.mkdir(parents=True, exist_ok=True)
    say(f"{args.size}: working in {work} (haul's output: bench.log)")
    migrate(args.size, work, args.max_seconds, exported=not args.no_export)


if __name__ == "__main__":
    main()
