"""Client CPU per attachment written to the blob store, and per check before the load sends it.

Writes N blobs of SIZE random bytes through `store.writer()`, the way a drain downloads them
(a temp file, the bytes hashed as they are written, a rename to the sha256 name), then checks
each one as the load does before sending it (`intact`: read back and hashed again), and prints
the process's CPU milliseconds (user + system, from its own rusage) and wall milliseconds per
blob for each step.

    .venv/bin/python bench/blobs.py [--blobs 1000] [--size 3000]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from haul.state.blobs import BlobStore


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blobs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=3000, help="bytes per blob")
    args = parser.parse_args()
    payloads = [os.urandom(args.size) for _ in range(args.blobs)]
    print(f"{args.blobs} blobs of {args.size} bytes")
    print(f"{'step':<24} {'CPU ms/blob':>12} {'wall ms/blob':>13}")
    with tempfile.TemporaryDirectory(prefix="haul-bench-blobs-") as root:
        store = BlobStore(Path(root) / "blobs")
        names = []
        cpu, wall = cpu_seconds(), time.perf_counter()
        for payload in payloads:
            with store.writer() as writer:
                writer.write(payload)
            names.append(writer.sha256)
        report("write", cpu, wall, args.blobs)
        cpu, wall = cpu_seconds(), time.perf_counter()
        if not all(store.intact(name) for name in names):
            raise SystemExit("a blob just written is not intact")
        report("intact (the load's check)", cpu, wall, args.blobs)


def report(step: str, cpu: float, wall: float, blobs: int) -> None:
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    print(f"{step:<24} {cpu / blobs * 1000:>12.3f} {wall / blobs * 1000:>13.3f}")


if __name__ == "__main__":
    main()
