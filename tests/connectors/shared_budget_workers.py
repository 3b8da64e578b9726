"""What the shared budget's tests run in processes of their own (spawned: each imports this
module afresh, as a shard's part is a process of its own)."""

from __future__ import annotations

import asyncio
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from haul.connectors.http import HttpCore
from haul.connectors.shared_budget import budget_file, shared_budget_for

KEY = "tracker read http://sandbox/v3 org 1 token test"


def take_slots(path: str, rate: float, count: int, tasks: int, out: Queue) -> None:
    """`tasks` coroutines take `count` send slots in all from the shared fixed budget at
    `path`; the slots' times go to `out`."""

    async def main() -> list[float]:
        budget = shared_budget_for(path, rate, key=KEY, service="tracker", direction="read")
        slots: list[float] = []

        async def task() -> None:
            while len(slots) < count:
                slots.append(await budget.acquire())

        await asyncio.gather(*(task() for _ in range(tasks)))
        return slots

    out.put(asyncio.run(main()))


def hold_the_lock(path: str, held: Event) -> None:
    """Take the file's lock and keep it until killed."""
    with budget_file(path).bucket(KEY):
        held.set()
        time.sleep(3600)


def read_myself(
    info: dict[str, Any], token: str, shared: str | None, answers: int, out: Queue
) -> None:
    """Read `/myself` from 8 tasks with an "auto" budget (shared through the file `shared`
    when given) until `answers` replies came; (requests sent, 429s answered) go to `out`."""

    async def main() -> tuple[int, int]:
        core = HttpCore.of(
            service="tracker",
            base_url=info["tracker"],
            token=info["tokens"][token],
            org_id=info["orgs"]["source"],
            read_rate="auto",
            shared_budget=shared,
        )
        done = 0

        async def task() -> None:
            nonlocal done
            while done < answers:
                await core.get_json("/myself")
                done += 1

        async with core:
            await asyncio.gather(*(task() for _ in range(8)))
        return core.requests_sent, core.requests_sent - done

    out.put(asyncio.run(main()))
