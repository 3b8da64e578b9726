"""What the throughput benches share: a sandbox in its own process, and one `haul` command
run as a child whose time and resources are its own, started as an installed haul starts: from
its modules' bytecode (see `compiled_bytecode`).

    from harness import HAUL, TOKEN_ENV, haul_command, sandbox
    with sandbox("small", 20.0) as info:
        ran = haul_command("extract", config, info)   # seconds, peak MB, CPU seconds
"""

from __future__ import annotations

import argparse
import compileall
import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

HAUL = str(Path(sys.executable).parent / "haul")
TOKEN_ENV = "HAUL_BENCH_TOKEN"
PACKAGES = ("connectors", "state", "pipelines", "sandbox", "orchestrate")


@functools.cache
def compiled_bytecode() -> None:
    """haul's modules compiled to bytecode once, as pip compiles an installed haul. An editable
    checkout run with PYTHONDONTWRITEBYTECODE set (as on the bench machine) otherwise compiles
    every module in every process: 0.2 s of CPU a command, counted as haul's, that no
    installed haul spends."""
    for name in PACKAGES:
        spec = importlib.util.find_spec(f"haul.{name}")
        folders = spec.submodule_search_locations if spec else None
        for folder in folders or []:
            compileall.compile_dir(folder, quiet=1)


@contextmanager
def sandbox(size: str, latency_ms: float, faults: str = "") -> Iterator[dict[str, Any]]:
    """`haul sandbox serve` of `size` with `latency_ms` on every request (and `faults`, the
    sandbox's fault spec); yields its JSON line (URLs, org ids, tokens), then stops it."""
    command = [HAUL, "sandbox", "serve", "--size", size, "--seed", "1"]
    command += ["--latency-ms", str(latency_ms)] + (["--faults", faults] if faults else [])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())
    finally:
        process.terminate()
        process.wait(timeout=30)


@dataclass(frozen=True)
class Ran:
    """One `haul` command's wall seconds, peak RSS (MB) and CPU seconds (user + system), its
    own alone, and the system part of them: on a machine whose disk is busy, creating files
    and folders costs the kernel several times more CPU, so that part varies run to run."""

    seconds: float
    peak_mb: float
    cpu_s: float
    system_s: float = 0.0


def haul_command(name: str, config: Path, info: dict[str, Any]) -> Ran:
    """Run `haul <name> --config <config>` against the sandbox `info`; SystemExit if it fails."""
    compiled_bytecode()
    env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
    started = time.monotonic()
    process = subprocess.Popen(
        [HAUL, name, "--config", str(config)], env=env, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"haul {name} failed with status {os.waitstatus_to_exitcode(status)}")
    cpu = usage.ru_utime + usage.ru_stime
    return Ran(seconds, usage.ru_maxrss / 1024, cpu, usage.ru_stime)


class Timed(Protocol):
    seconds: float


T = TypeVar("T", bound=Timed)


def fastest(runs: list[list[T]]) -> list[T]:
    """Each phase's fastest run: the pipeline is CPU-bound, so other work on a shared machine
    slows it far more than the baseline, which mostly waits on latency (measured once)."""
    return [min(tries, key=lambda phase: phase.seconds) for tries in zip(*runs, strict=True)]


def pipeline_arguments(description: str, size: str) -> argparse.Namespace:
    """The options of a bench that runs the pipeline `--runs` times against a baseline."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", default=size)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--runs", type=int, default=2, help="pipeline runs, each phase's fastest kept"
    )
    return parser.parse_args()
