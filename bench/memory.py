"""Benchmark: peak memory (RSS) of `haul extract` and `haul load` as the org grows.

Each size gets its own sandbox process (`haul sandbox serve`) and its own staging folder; each
haul command runs as a child process, and its peak RSS is read from the kernel's accounting
of that child alone (`os.wait4`). The config is the default one (both rate budgets "auto").
The large org (100 000 issues) takes a long while: opt in with `--large`, and bound each
command with `--max-seconds` (it is then stopped with SIGTERM, which haul handles like
Ctrl-C, and its line says so: the peak is of the part that ran).

    .venv/bin/python bench/memory.py [--sizes small,medium] [--large] [--max-seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from results import record

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config

HAUL = str(Path(sys.executable).parent / "haul")
TOKEN_ENV = "HAUL_BENCH_TOKEN"


def peak_mb(
    command: list[str], env: dict[str, str], max_seconds: float | None
) -> tuple[float, float, int, bool]:
    """Run `command` (SIGTERM after `max_seconds`); its peak RSS in MB, its wall seconds, its
    exit status and whether it was stopped."""
    started = time.monotonic()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = None
    if max_seconds is not None:
        timer = threading.Timer(max_seconds, child.send_signal, [signal.SIGTERM])
        timer.start()
    _, status, usage = os.wait4(child.pid, 0)
    stopped = timer is not None and timer.finished.is_set()  # it fired (not cancelled yet)
    if timer is not None:
        timer.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, time.monotonic() - started, child.returncode, stopped


def measure(size: str, max_seconds: float | None) -> list[tuple[str, str, float, float, int, bool]]:
    serve = subprocess.Popen(
        [HAUL, "sandbox", "serve", "--size", size, "--seed", "1"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert serve.stdout is not None
        info = json.loads(serve.stdout.readline())
        work = Path(tempfile.mkdtemp(prefix=f"haul-memory-{size}-"))
        options = SandboxConfig(source_token_env=TOKEN_ENV, queue_mapping={})
        config = write_sandbox_config(work, info, options)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        rows = []
        for command in ("extract", "load"):
            mb, seconds, status, stopped = peak_mb(
                [HAUL, command, "--config", str(config)], env, max_seconds
            )
            rows.append((size, command, mb, seconds, status, stopped))
        return rows
    finally:
        serve.terminate()
        serve.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="small,medium")
    parser.add_argument("--large", action="store_true", help="add the 100 000-issue org")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="stop each command after this long"
    )
    args = parser.parse_args()
    sizes = [size for size in args.sizes.split(",") if size] + (["large"] * args.large)
    print(f"{'org':8} {'command':8} {'peak MB':>8} {'seconds':>8} {'exit':>5}")
    for size in sizes:
        for org, command, mb, seconds, status, stopped in measure(size, args.max_seconds):
            note = "  (stopped: the peak is of the part that ran)" if stopped else ""
            print(f"{org:8} {command:8} {mb:8.0f} {seconds:8.1f} {status:5d}{note}", flush=True)
            record(f"peak RSS, haul {command}, {org} org", mb, "<= 300", unit="MB",
                   note="stopped early" if stopped else f"exit {status}")  # fmt: skip


if __name__ == "__main__":
    main()
