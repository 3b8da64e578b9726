"""Profile `haul extract` and `haul load` with pyinstrument against a sandbox with latency.

Starts `haul sandbox serve` in its own process, writes the default config for it (both rate
budgets "auto"), and runs each stage under pyinstrument; the text profiles land in OUT
(default: a temporary folder, printed).
Times are wall time as the profiler sees it; its header says the CPU time too.

    .venv/bin/python bench/profile_stages.py [--size small] [--latency-ms 20] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config

BIN = Path(sys.executable).parent
TOKEN_ENV = "HAUL_BENCH_TOKEN"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("pyinstrument", path=str(BIN)) is None:
        raise SystemExit("pyinstrument is not installed: .venv/bin/pip install pyinstrument")
    out = args.out or Path(tempfile.mkdtemp(prefix="haul-profile-"))
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="haul-profile-work-"))
    server = subprocess.Popen(
        [str(BIN / "haul"), "sandbox", "serve", "--size", args.size,
         "--latency-ms", str(args.latency_ms), "--seed", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        info = json.loads(server.stdout.readline())
        options = SandboxConfig(source_token_env=TOKEN_ENV, queue_mapping={})  # the default
        config = write_sandbox_config(workdir, info, options)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        for stage in ("extract", "load"):
            report = out / f"profile_{stage}.txt"
            subprocess.run(
                [str(BIN / "pyinstrument"), "-r", "text", "-o", str(report),
                 str(BIN / "haul"), stage, "--config", str(config)],
                env=env, stdout=subprocess.DEVNULL, check=True,
            )  # fmt: skip
            print(f"{stage}: {report}")
            print("\n".join(report.read_text(encoding="utf-8").splitlines()[:40]))
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
