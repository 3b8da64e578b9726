"""Benchmark: the CPU a re-plan costs (the full pass over the staging store that follows every
extract or load that staged something).

Starts `haul sandbox serve` in its own process, stages its source org with `haul extract`
(tracker, wiki and forms, the default config), then re-plans that store `--rounds` times in
this process. It prints, for each entity's plan, the records planned, the CPU seconds spent
yielding its rows, and those of its whole re-plan (the rows yielded again and upserted into
the ledger); then the whole re-plan, every entity in one transaction, as a stage runs it.
Each round runs on a ledger already planned, as every nightly re-plan does. No assertions:
the figures are for reading; compare commits with runs interleaved, since CPU time on a
shared machine drifts.

    .venv/bin/python bench/plan.py [--size small] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from harness import HAUL, TOKEN_ENV, sandbox
from tracker import compile_haul  # bench/tracker.py, beside this one

from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.engine import plan_ledger
from haul.pipelines.registry import plans as all_plans
from haul.state.store import StagingStore


def stage(size: str, workdir: Path) -> Path:
    """A config for a fresh sandbox org of `size`, and its source staged by `haul extract`."""
    with sandbox(size, 0.0) as info:
        services = tuple(name for name in ("tracker", "wiki", "forms") if info.get(name))
        options = SandboxConfig(source_token_env=TOKEN_ENV, services=services)
        config = write_sandbox_config(workdir, info, options)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        started = time.monotonic()
        subprocess.run(
            [HAUL, "extract", "--config", str(config)],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        print(f"staged the {size} org in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return config


def replan(store: StagingStore, plans: dict) -> dict[str, tuple[int, float, float]]:
    """Each entity's (records, CPU s yielding its rows, CPU s of its whole re-plan), one pass:
    the rows are yielded once alone, then once more into the ledger by `plan_ledger`."""
    figures = {}
    for name, plan in plans.items():
        started = time.process_time()
        records = sum(1 for _ in plan(store))
        yielded = time.process_time()
        plan_ledger(store, {name: plan})
        figures[name] = (records, yielded - started, time.process_time() - yielded)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    compile_haul()
    workdir = Path(tempfile.mkdtemp(prefix=f"haul-bench-plan-{args.size}-"))
    try:
        config = load_config(stage(args.size, workdir))
        plans = all_plans(config)
        rounds: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
        totals = []
        with StagingStore.open(config.staging_path) as store:
            for _ in range(args.rounds):
                for name, figures in replan(store, plans).items():
                    rounds[name].append(figures)
                started = time.process_time()
                plan_ledger(store, plans)  # the whole re-plan, as a stage runs it
                totals.append(time.process_time() - started)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\nre-plan of the {args.size} org, CPU seconds, median of {args.rounds} rounds")
    print(f"{'entity':<24}{'records':>9}{'yield s':>9}{'re-plan s':>11}")
    for name, figures in rounds.items():
        print(
            f"{name:<24}{figures[0][0]:>9}{statistics.median(f[1] for f in figures):>9.2f}"
            f"{statistics.median(f[2] for f in figures):>11.2f}"
        )
    records = sum(figures[0][0] for figures in rounds.values())
    print(
        f"{'all (one transaction)':<24}{records:>9}  {statistics.median(totals):.2f} s "
        f"(rounds: {', '.join(f'{t:.2f}' for t in totals)})"
    )


if __name__ == "__main__":
    main()
