"""Client CPU per request: haul's HttpCore/TrackerClient against bare httpx and bare aiohttp.

Starts the sandbox (small org) in its own process, then sends the same N link listings with
8 in flight through each client, twice, and prints CPU milliseconds per request and the rate.
bare httpx is httpx.AsyncClient on its own pool (httpcore); bare aiohttp is the wire haul
sends over (connectors/transport.py), the floor; haul adds its own layers on top (retries,
budgets, error mapping, httpx's request and response objects).

    .venv/bin/python bench/http_overhead.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
from results import record

from haul.connectors.tracker import TrackerClient

IN_FLIGHT = 8


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def timed(count: int, one: Callable[[int], Awaitable[None]]) -> tuple[float, float]:
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def gated(n: int) -> None:
        async with gate:
            await one(n)

    cpu, wall = cpu_seconds(), time.monotonic()
    await asyncio.gather(*(gated(n) for n in range(count)))
    return cpu_seconds() - cpu, time.monotonic() - wall


async def bare(info: dict, keys: list[str], count: int) -> tuple[float, float]:
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    limits = httpx.Limits(max_connections=IN_FLIGHT)
    async with httpx.AsyncClient(
        base_url=info["tracker"] + "/", headers=headers, limits=limits
    ) as http:

        async def one(n: int) -> None:
            (await http.get(f"issues/{keys[n % len(keys)]}/links")).json()

        return await timed(count, one)


async def bare_aiohttp(info: dict, keys: list[str], count: int) -> tuple[float, float]:
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    connector = aiohttp.TCPConnector(limit=IN_FLIGHT)
    async with aiohttp.ClientSession(headers=headers, connector=connector) as http:

        async def one(n: int) -> None:
            async with http.get(f"{info['tracker']}/issues/{keys[n % len(keys)]}/links") as reply:
                json.loads(await reply.read())

        return await timed(count, one)


async def haul(info: dict, keys: list[str], count: int) -> tuple[float, float]:
    client = TrackerClient.connect(
        base_url=info["tracker"],
        token=info["tokens"]["admin"],
        org_id=info["orgs"]["source"],
        read_rate=1_000_000,
        max_connections=IN_FLIGHT,
    )
    async with client:

        async def one(n: int) -> None:
            await client.list_links(keys[n % len(keys)])

        return await timed(count, one)


async def run(info: dict, count: int) -> None:
    async with TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"]["source"]
    ) as client:
        issues = await client.core.post_json(
            "/issues/_search", params={"perPage": 200}, write=False
        )
    keys = [issue["key"] for issue in issues]
    print(f"{'client':<16}{'CPU ms/request':>16}{'requests/s':>12}")
    names = {bare: "bare httpx", bare_aiohttp: "bare aiohttp", haul: "haul"}
    best: dict[str, float] = {}  # client -> its lower CPU ms per request of the two rounds
    for measure in (bare, bare_aiohttp, haul) * 2:
        cpu, wall = await measure(info, keys, count)
        per_request = cpu / count * 1000
        name = names[measure]
        best[name] = min(best.get(name, per_request), per_request)
        print(f"{name:<16}{per_request:>16.2f}{count / wall:>12.0f}")
    note = f"{count} link listings, {IN_FLIGHT} in flight, best of 2 rounds"
    record("haul CPU per request / bare aiohttp", best["haul"] / best["bare aiohttp"], "",
           unit="x", note=note)  # fmt: skip
    record("haul CPU per request / bare httpx", best["haul"] / best["bare httpx"], "",
           unit="x", note=note)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    command = [sys.executable, "-m", "haul.sandbox", "--size", "small", "--seed", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        asyncio.run(run(json.loads(process.stdout.readline()), args.requests))
    finally:
        process.terminate()
        process.wait(timeout=15)


if __name__ == "__main__":
    main()
