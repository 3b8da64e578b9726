"""Benchmark: how long `haul status` takes to gather its counts on a big staging store.

Builds, in a temporary directory, a store of `--issues` issues with three comments each, all
planned and none loaded, then times `gather_status` on it `--rounds` times in this process
(the fastest round counts: status is CPU- and disk-bound). The target is a user's: an answer in
under a second on 100 000 issues, so that `haul status` can be run in a loop while a migration
runs. It is absolute seconds, so compare runs on the same machine.

    .venv/bin/python bench/status.py [--issues 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from results import record

from haul.pipelines.commands.status import gather_status
from haul.pipelines.registry import services
from haul.state.store import StagingStore

sys.path.insert(0, str(Path(__file__).parents[1]))  # the store is built as its test builds it
from tests.helpers.big_store import build_store


def time_status(path: Path, rounds: int) -> float:
    best = float("inf")
    with StagingStore.open(path) as store:
        for _ in range(rounds):
            started = time.perf_counter()
            status = gather_status(store, services())
            best = min(best, time.perf_counter() - started)
    lines = {line.entity: line for line in status.lines}
    assert lines["issue"].staged > 0  # the store was read, not an empty one
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--issues", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="haul-bench-status-"))
    try:
        build_store(workdir / "big.db", args.issues)
        seconds = time_status(workdir / "big.db", args.rounds)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    note = f"{args.issues} issues, {3 * args.issues} comments, fastest of {args.rounds}"
    print(f"haul status (gather_status): {seconds:.3f} s ({note})")
    record("haul status on a big store", seconds, "<= 1.0", unit="s", note=note)


if __name__ == "__main__":
    main()
