"""Snapshots of a sandbox's source and target orgs read through the plain API, synchronously,
for the tests that compare a migration with an uninterrupted or one-process twin."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.helpers.haul_fixtures import client_for
from tests.helpers.org_snapshot import org_snapshot, org_structure

MAPPING = {"TEST": "NEW"}  # the queue the twin tests move under another key


def snapshot_target(
    info: dict[str, Any],
    queues: list[str],
    *,
    org: str = "target",
    mapping: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The target's issues (keys mapped back) and, under "structure", its organisation
    objects by name: one made twice shows twice. `org`: the sandbox org migrated into (its
    `empty` one moves with no queue mapping)."""
    mapping = MAPPING if mapping is None else mapping

    async def read() -> dict[str, Any]:
        async with client_for(info, org) as target:
            back = {v: k for k, v in mapping.items()}
            mapped = [mapping.get(q, q) for q in queues]
            issues = await org_snapshot(target, mapped, rename=back)
            return {**issues, "structure": await org_structure(target, mapped)}

    return asyncio.run(read())


def snapshot_source(info: dict[str, Any], queues: list[str]) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with client_for(info, "source") as source:
            return await org_snapshot(source, queues)

    return asyncio.run(read())
