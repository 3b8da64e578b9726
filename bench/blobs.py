"""Client CPU per attachment written to the blob store, the way a drain writes them.

Writes N blobs of SIZE random bytes through `async with store.writer(...)`, streamed (size
unknown: a temp file made in a worker thread, then fsync and rename in another) and gathered
in memory (size announced: one trip to a worker thread at the end), and prints the process's
CPU milliseconds (user + system, from its own rusage) and wall milliseconds per blob.

    .venv/bin/python bench/blobs.py [--blobs 1000] [--size 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
from pathlib import Path

from haul.state.blobs import BlobStore


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def write_all(store: BlobStore, payloads: list[bytes], announce: bool) -> None:
    for payload in payloads:
        async with store.writer(expected_size=len(payload) if announce else None) as writer:
            writer.write(payload)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--blobs", type=int, default=1000)
    parser.add_argument("--size", type=int, default=3000, help="bytes per blob")
    args = parser.parse_args()
    print(f"{args.blobs} blobs of {args.size} bytes")
    print(f"{'writer':<22} {'CPU ms/blob':>12} {'wall ms/blob':>13}")
    for name, announce in (("streamed", False), ("in memory", True), ("streamed", False)):
        payloads = [os.urandom(args.size) for _ in range(args.blobs)]
        with tempfile.TemporaryDirectory(prefix="haul-bench-blobs-") as root:
            store = BlobStore(Path(root) / "blobs")
            cpu, wall = cpu_seconds(), time.perf_counter()
            asyncio.run(write_all(store, payloads, announce))
            cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
        print(f"{name:<22} {cpu / args.blobs * 1000:>12.3f} {wall / args.blobs * 1000:>13.3f}")


if __name__ == "__main__":
    main()
