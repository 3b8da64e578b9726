"""Requests per second the sandbox serves: scroll pages, comment pages, issue imports.

Starts ``python -m haul.sandbox --size small`` as a subprocess (reading its JSON line), then runs a
few concurrent httpx clients against each workload for a bounded time or number of requests,
and prints a small table: the rate reached, and the server's own CPU time per request with the
rate one core would allow (the load generator shares the machine, so the first understates
the server).  No assertions: the figures are for reading.

    .venv/bin/python bench/sandbox.py [--size small] [--clients 4] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

Workload = Callable[[httpx.AsyncClient, int], Awaitable[int]]  # one unit of work -> requests made


def start(size: str) -> tuple[subprocess.Popen, dict]:
    command = [sys.executable, "-m", "haul.sandbox", "--size", size, "--seed", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


def client(info: dict, org: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    limits = httpx.Limits(max_connections=16)
    return httpx.AsyncClient(base_url=info["tracker"], headers=headers, limits=limits, timeout=60)


async def scroll_pages(http: httpx.AsyncClient, _: int) -> int:
    """One full sorted scroll of the org, 100 issues a page."""
    params = {"scrollType": "sorted", "perScroll": 100}
    reply = await http.post("/issues/_search", json={}, params=params)
    requests = 1
    while "X-Scroll-Id" in reply.headers:
        params = {"scrollId": reply.headers["X-Scroll-Id"]}
        reply = await http.post("/issues/_search", json={}, params=params)
        requests += 1
    return requests


def comment_pages(keys: list[str]) -> Workload:
    async def one(http: httpx.AsyncClient, n: int) -> int:
        reply = await http.get(f"/issues/{keys[n % len(keys)]}/comments", params={"perPage": 50})
        reply.raise_for_status()
        return 1

    return one


async def issue_import(http: httpx.AsyncClient, n: int) -> int:
    body = {
        "queue": "NEW",
        "summary": f"Benchmark issue {n}",
        "createdAt": "2023-01-01T00:00:00.000+0000",
        "createdBy": "alice",
        "updatedAt": "2023-02-01T00:00:00.000+0000",
        "updatedBy": "bob",
        "description": "Imported by the sandbox benchmark",
    }
    reply = await http.post("/issues/_import", json=body)
    reply.raise_for_status()
    return 1


async def measure(
    http: httpx.AsyncClient, work: Workload, clients: int, seconds: float, limit: int
) -> tuple[int, float]:
    """Run ``work`` from ``clients`` tasks until the time or request budget is spent."""
    counter = itertools.count()
    done = 0
    started = time.perf_counter()

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() - started < seconds and done < limit:
            done += await work(http, next(counter))

    await asyncio.gather(*(worker() for _ in range(clients)))
    return done, time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(
    info: dict, clients: int, seconds: float, pid: int
) -> list[tuple[str, int, float, float]]:
    async with client(info, "source") as source, client(info, "target") as target:
        issues = (await source.post("/issues/_search", params={"perPage": 200})).json()
        keys = [issue["key"] for issue in issues]
        plans = [
            ("scroll pages (100 issues)", source, scroll_pages, 100_000),
            ("comment pages (50)", source, comment_pages(keys), 20_000),
            ("issue imports", target, issue_import, 20_000),
        ]
        rows = []
        for name, http, work, limit in plans:
            before = cpu_seconds(pid)
            requests, took = await measure(http, work, clients, seconds, limit)
            rows.append((name, requests, took, cpu_seconds(pid) - before))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    process, info = start(args.size)
    try:
        rows = asyncio.run(run(info, args.clients, args.seconds, process.pid))
    finally:
        process.terminate()
        process.wait(timeout=15)
    print(f"sandbox --size {args.size}, {args.clients} concurrent clients")
    # the load generator shares the machine; the server's own CPU per request gives its ceiling
    print(
        f"{'workload':<28}{'requests':>10}{'seconds':>9}{'req/s':>8}{'server ms/req':>15}{'ceiling req/s':>15}"
    )
    for name, requests, took, cpu in rows:
        per_request = cpu / max(1, requests)
        ceiling = 1 / per_request if per_request else float("inf")
        print(
            f"{name:<28}{requests:>10}{took:>9.2f}{requests / took:>8.0f}"
            f"{per_request * 1000:>15.2f}{ceiling:>15.0f}"
        )


if __name__ == "__main__":
    main()
