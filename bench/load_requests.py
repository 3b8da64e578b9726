"""Benchmark: the load's requests per record beside the floor the API allows, and haul's CPU per
request in extract and load beside bare aiohttp, all in one run on one sandbox.

On the small org (no latency: requests do not depend on it), with the default config:
- `haul extract`, then `haul load`: the tracker requests the load sent (counted by the sandbox,
  `/_sandbox/stats`) per record loaded, beside the floor counted from the ledger: one write per
  record the load sent (a checklist is one record: its items go in one array; a record found
  in the target, or carried by its issue's import, takes none);
- then 1% of the issues change at the source (bench/request_counts.py's nightly changes),
  `haul extract` and `haul load` again: the sync's requests per record it carried, beside the
  same floor: one write per ledger row the sync moved, and the two of each trigger or
  autoaction switched off for the load and on after it (`planning.quiet_rules`: importing
  fires none), counted from the sync's PATCHes of them;
- haul's own CPU (user + system of each `haul` process, start-up included) per request it
  sent, in extract and in load, beside bare aiohttp's (bench/http_overhead.py's client: the
  same link listing N times, 8 in flight) measured against the same sandbox right after. The
  extract's is the better of two extracts into fresh stores, as aiohttp's is the better of two
  rounds: other work on the shared machine only adds CPU time (the file system's share, the
  system CPU, swung 0.10-0.42 ms per request between runs of the same code).

    .venv/bin/python bench/load_requests.py [--size small] [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from harness import Ran, haul_command, sandbox
from http_overhead import bare_aiohttp
from request_counts import people_change, staged_issues, write_config
from results import record
from tracker import sandbox_requests

SENT = "SELECT entity, count(*) FROM ledger WHERE status = 'done' AND found = 0 AND attempts > 0"
BETTER = "; the better of two extracts, as aiohttp's of two rounds"
ROWS = "SELECT entity, source_id, status, target_id, payload_hash, updated_at FROM ledger"


def tracker_api(by_route: Counter[str]) -> int:
    """The tracker's API requests (attachment downloads left out: the extract's bytes)."""
    return sum(
        n for route, n in by_route.items()
        if route.split(" ", 1)[1].startswith("/v3/") and not route.endswith("/{filename}")
    )  # fmt: skip


def sent_rows(database: Path) -> Counter[str]:
    """Ledger rows done by a send of this store, by entity: the floor's one write each."""
    with sqlite3.connect(database) as db:
        return Counter(dict(db.execute(f"{SENT} GROUP BY entity").fetchall()))


def ledger_rows(database: Path) -> set[tuple[Any, ...]]:
    with sqlite3.connect(database) as db:
        return set(db.execute(ROWS).fetchall())


def counted(command: str, config: Path, info: dict[str, Any]) -> tuple[Counter[str], Ran]:
    before = sandbox_requests(info)
    ran = haul_command(command, config, info)
    return sandbox_requests(info) - before, ran


async def aiohttp_cpu_ms(info: dict[str, Any], keys: list[str], count: int) -> float:
    """Bare aiohttp's CPU milliseconds per request, the better of two rounds."""
    rounds = [await bare_aiohttp(info, keys, count) for _ in range(2)]
    return min(cpu for cpu, _ in rounds) / count * 1000


def cpu_per_request(by_route: Counter[str], ran: Ran) -> float:
    """haul's CPU milliseconds (start-up included) per request it sent."""
    return 1000 * ran.cpu_s / max(1, sum(by_route.values()))


def rule_switches(by_route: Counter[str]) -> int:
    """The PATCHes that switch a queue's triggers and autoactions off and on around a sync."""
    rules = ("PATCH /v3/queues/{queue}/triggers/", "PATCH /v3/queues/{queue}/autoactions/")
    return sum(n for route, n in by_route.items() if route.startswith(rules))


def show(title: str, by_route: Counter[str], rows: int, floor: int) -> None:
    sent = tracker_api(by_route)
    print(f"{title}: {sent} requests for {rows} records ({sent / max(1, rows):.2f} per record),"
          f" floor {floor} ({floor / max(1, rows):.2f} per record)")  # fmt: skip
    for route, n in by_route.most_common(14):
        print(f"  {route:<66}{n:>7}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix=f"haul-bench-load-{args.size}-"))
    again = Path(tempfile.mkdtemp(prefix=f"haul-bench-extract-{args.size}-"))
    database = workdir / "haul.db"
    try:
        with sandbox(args.size, 0.0) as info:
            config = write_config(workdir, info)
            extracts = [counted("extract", write_config(again, info), info)]
            extracts.append(counted("extract", config, info))
            extracted, extract_ran = min(extracts, key=lambda run: cpu_per_request(*run))
            loaded, load_ran = counted("load", config, info)
            migration_floor = sent_rows(database)
            issues = staged_issues(config)
            bare_ms = asyncio.run(
                aiohttp_cpu_ms(info, [str(i["key"]) for i in issues], args.requests)
            )
            changed = asyncio.run(people_change(info, issues))
            before = ledger_rows(database)
            haul_command("extract", config, info)
            synced, _ = counted("load", config, info)
            moved = len(ledger_rows(database) - before)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(again, ignore_errors=True)
    print("haul extract, two into fresh stores: " + ", ".join(
        f"{cpu_per_request(*run):.2f} ms per request" for run in extracts))  # fmt: skip
    migration_rows = sum(migration_floor.values())
    show("migration load", loaded, migration_rows, migration_rows)
    switched = rule_switches(synced)
    show(f"nightly sync load ({changed} issues changed)", synced, moved, moved + switched)
    note = f"{args.size} org, {len(issues)} issues"
    record("tracker migration load: requests per record sent", tracker_api(loaded) /
           max(1, migration_rows), "<= 1.1", unit="", note=f"{note}; floor 1.00 (one write a "
           f"record, a checklist one array: {migration_rows} records)")  # fmt: skip
    record("tracker nightly sync load: requests per record carried", tracker_api(synced) /
           max(1, moved), "", unit="", note=f"{note}, {changed} changed; floor "
           f"{(moved + switched) / max(1, moved):.2f} (one write a record carried, {moved}"
           f" ledger rows moved, and {switched} rule switches off and on)")  # fmt: skip
    for stage, by_route, ran in (("extract", extracted, extract_ran), ("load", loaded, load_ran)):
        per_request = cpu_per_request(by_route, ran)
        print(f"haul {stage}: {ran.cpu_s:.1f} CPU s (system {ran.system_s:.1f} s),"
              f" {per_request:.2f} ms per request; bare aiohttp {bare_ms:.2f} ms per request")  # fmt: skip
        system = 1000 * ran.system_s / max(1, sum(by_route.values()))
        record(f"haul {stage}: CPU ms per request", per_request, "<= 1", unit="ms",
               note=f"{note}; of which system {system:.2f} ms; bare aiohttp {bare_ms:.2f} ms"
               f" in the same run{BETTER if stage == 'extract' else ''}")  # fmt: skip


if __name__ == "__main__":
    main()
