"""Benchmark: peak memory (RSS) and time of `haul export` in each format as the org grows,
and of the flow model alone (its five derived tables, Parquet and haul.duckdb).

Each size gets its own sandbox process (`haul sandbox serve`) and staging folder, extracted
once; then `haul export` runs as a child process per format, and its peak RSS is read from
the kernel's accounting of that child alone (`os.wait4`, the child's own `getrusage`). The
export streams a chunk of rows at a time, and the model an issue at a time, so its peak
should barely move with the org's size. The medium org takes a while to extract: opt in with
`--medium`.

    .venv/bin/python bench/export_memory.py [--medium] [--formats csv,parquet,xlsx]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config

HAUL = str(Path(sys.executable).parent / "haul")
TOKEN_ENV = "HAUL_BENCH_TOKEN"
MODEL = "status_intervals,issue_field_history,issue_daily,cycle_times,flow_weekly"


def peak_mb(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Run `command`; its peak RSS in MB, its wall seconds and its exit status."""
    started = time.monotonic()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, time.monotonic() - started, child.returncode


def measure(size: str, formats: list[str]) -> list[tuple[str, str, int, float, float, int]]:
    """(org, format, rows, peak MB, seconds, exit status) of one export per format."""
    serve = subprocess.Popen(
        [HAUL, "sandbox", "serve", "--size", size, "--seed", "1"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert serve.stdout is not None
        info = json.loads(serve.stdout.readline())
        work = Path(tempfile.mkdtemp(prefix=f"haul-export-memory-{size}-"))
        options = SandboxConfig(
            source_token_env=TOKEN_ENV,
            with_target=False,
            queue_mapping={},
            mapping_extra={},
            endpoint_extra={"read_rps": 5000},
            sections="[tuning]\nconcurrency = 32\nper_scroll = 1000\n",
        )
        config = write_sandbox_config(work, info, options)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        subprocess.run([HAUL, "extract", "--config", str(config)], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        rows = []
        runs = [(fmt, ["--format", fmt]) for fmt in formats]
        runs.append(("model", ["--format", "parquet", "--entities", MODEL]))
        for name, options in runs:
            out = work / f"exports-{name}"
            command = [HAUL, "export", "--config", str(config), *options, "--out", str(out)]
            mb, seconds, status = peak_mb(command, env)
            rows.append((size, name, _rows_written(out), mb, seconds, status))
        return rows
    finally:
        serve.terminate()
        serve.wait(30)


def _rows_written(out: Path) -> int:
    manifest = out / "latest" / "manifest.json"
    if not manifest.is_file():
        return 0
    return sum(entry["rows"] for entry in json.loads(manifest.read_text())["files"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--medium", action="store_true", help="add the medium org")
    parser.add_argument("--formats", default="csv,parquet,xlsx")
    args = parser.parse_args()
    sizes = ["small"] + (["medium"] * args.medium)
    formats = [fmt for fmt in args.formats.split(",") if fmt]
    print(f"{'org':8} {'format':8} {'rows':>9} {'peak MB':>8} {'seconds':>8} {'exit':>5}")
    for size in sizes:
        for org, fmt, rows, mb, seconds, status in measure(size, formats):
            print(f"{org:8} {fmt:8} {rows:9d} {mb:8.0f} {seconds:8.1f} {status:5d}", flush=True)


if __name__ == "__main__":
    main()
