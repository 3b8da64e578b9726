"""Benchmark: the forms drain and the tracker back-fill against a sandbox with injected latency.

`haul extract` stages every source survey with its answers and downloads their files (the
forms drain); `haul load` back-fills the support survey's answers into tracker issues with
their files (one rule, `into = "tracker"`). Each is run for the pipeline and for a baseline
doing the same work one request at a time (`[tuning] concurrency = 1`) in the same run, and
the speed-up is printed, and recorded for `make bench`'s table (bench/results.py). The
pipeline runs `--runs` times, each on a fresh sandbox, and each phase's fastest run counts
(other work on a shared machine slows the CPU-bound pipeline far more than the baseline).
The sandbox runs in its own process (`haul sandbox serve`).

    .venv/bin/python bench/forms.py [--size medium] [--latency-ms 20] [--concurrency 32] [--runs 2]
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import TOKEN_ENV, fastest, haul_command, pipeline_arguments, sandbox
from results import record

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.state.store import StagingStore

TARGET = ">= 10"  # issue 27: on the medium org, the drain and the back-fill load alike
# the support requests (the sandbox's first survey) into the target's NEW queue
RULE = """
[[backfill]]
survey = "{survey}"
into = "tracker"
queue = "NEW"
summary = "{{subject}} ({{email}})"
created_by = "{{email}}"
fields = {{ priority = "{{urgency}}" }}
values = {{ priority = {{ low = "minor", high = "critical" }} }}
"""


@dataclass
class Phase:
    name: str
    records: int  # answers staged (extract), issues back-filled (load)
    files: int
    megabytes: float
    seconds: float
    peak_mb: float


def run_phase(name: str, config: Path, info: dict[str, Any]) -> Phase:
    ran = haul_command(name, config, info)
    with StagingStore.open(config.parent / "haul.db") as store:
        if name == "extract":
            records = store.count_records().get("survey_answer", 0)
            files = list(store.iter_records("survey_file"))
        else:
            done = store.ledger.counts()
            records = done.get("backfill_issue", {}).get("done", 0)
            files = [
                r
                for r in store.iter_records("survey_file")
                if (row := store.ledger.get("backfill_attachment", r.source_id)) is not None
                and row.status == "done"
            ]
        size = sum(
            store.blobs.path(r.blob).stat().st_size
            for r in files
            if r.blob and store.blobs.exists(r.blob)
        )
    return Phase(name, records, len(files), size / 1e6, ran.seconds, ran.peak_mb)


def measure(size: str, latency_ms: float, concurrency: int) -> list[Phase]:
    workdir = Path(tempfile.mkdtemp(prefix=f"haul-bench-forms-{size}-"))
    try:
        with sandbox(size, latency_ms) as info:
            options = SandboxConfig(
                source_token_env=TOKEN_ENV,
                services=("forms", "tracker"),
                queues=[],  # the tracker only takes the back-filled issues
                endpoint_extra={"read_rps": 5000, "write_rps": 5000},
                sections=f"[tuning]\nconcurrency = {concurrency}\n"
                + RULE.format(survey=info["surveys"]["source"][0]),
            )
            config = write_sandbox_config(workdir, info, options)
            return [run_phase("extract", config, info), run_phase("load", config, info)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    args = pipeline_arguments((__doc__ or "").splitlines()[0], "medium")
    pipeline = fastest(
        [measure(args.size, args.latency_ms, args.concurrency) for _ in range(args.runs)]
    )
    baseline = measure(args.size, args.latency_ms, 1)
    print(f"\nforms, {args.size} org, sandbox latency {args.latency_ms:g} ms")
    print(
        f"{'run':<18}{'records':>8}{'files':>7}{'MB':>7}{'seconds':>9}{'records/s':>10}{'peak MB':>9}"
    )
    for label, phases in (("pipeline", pipeline), ("baseline", baseline)):
        for p in phases:
            print(
                f"{label + ' ' + p.name:<18}{p.records:>8}{p.files:>7}{p.megabytes:>7.1f}"
                f"{p.seconds:>9.1f}{p.records / p.seconds:>10.1f}{p.peak_mb:>9.0f}"
            )
    note = f"{args.size} org, {args.latency_ms:g} ms"
    target = TARGET if args.size == "medium" else ""  # the target is the medium org's
    names = {"extract": "forms drain", "load": "back-fill load"}
    for fast, slow in zip(pipeline, baseline, strict=True):
        ratio = slow.seconds / fast.seconds
        print(f"speed-up {names[fast.name]}: {ratio:.1f}x")
        record(f"{names[fast.name]} / one request at a time", ratio, target, note=note)


if __name__ == "__main__":
    main()
