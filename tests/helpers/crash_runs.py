"""`haul` stages as child processes a test can kill at a chosen instant, and finish after."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HAUL = str(Path(sys.executable).parent / "haul")


def haul(config: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [HAUL, *args, "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def kill_when(
    config: Path,
    env: dict[str, str],
    rng: random.Random,
    ready: Callable[[], bool],
    *,
    stage: str = "load",
    jitter: float = 0.03,
    exits: tuple[int, ...] = (0, 1, 3),
) -> bool:
    """Start `haul <stage>`, SIGKILL it a random instant of up to `jitter` seconds after
    `ready()` holds; True if it was killed before it ended."""
    process = haul(config, stage, env=env)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if ready():
            time.sleep(rng.uniform(0, jitter))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.communicate()
                return True
        time.sleep(0.005)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode in exits, stderr.decode()
    return False


def finish(config: Path, stage: str, env: dict[str, str]) -> None:
    """Run `haul <stage>` to the end; on a failure, say which records failed and why."""
    process = haul(config, stage, env=env)
    stdout, stderr = process.communicate(timeout=300)
    if process.returncode != 0:
        failures = subprocess.run(
            [HAUL, "failures", "--config", str(config)], env=env, capture_output=True
        )
        output = stdout + stderr + failures.stdout + failures.stderr
        raise AssertionError(f"haul {stage} exited {process.returncode}:\n{output.decode()}")
