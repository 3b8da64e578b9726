"""A queue's triggers and macros: the reads an extract needs and the writes a load makes;
`TrackerClient` has them all (the official SDK's `Triggers` and `Macros` collections; the spec
names them without their paths).

A trigger's edit goes under its version lock; a macro has no version. Creations are not
idempotent (an uncertain outcome raises AmbiguousWriteError, never repeated here); edits and
deletions are, and are retried after a lost reply like a read.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from haul.connectors.http import ServiceClient

Record = dict[str, Any]
KINDS = ("triggers", "macros")  # the path of each kind under its queue


def _path(queue: str, kind: str, rule_id: str | int | None = None) -> str:
    path = f"/queues/{quote(str(queue), safe='')}/{kind}"
    return path if rule_id is None else f"{path}/{quote(str(rule_id), safe='')}"


class QueueRuleCalls(ServiceClient):
    """The triggers' and macros' endpoints (mixed into `TrackerClient`); `kind` is one of
    `KINDS`."""

    async def list_rules(self, queue: str, kind: str) -> list[Record]:
        """A queue's triggers (name, conditions, actions, active, version) or macros (name,
        body, fieldChanges)."""
        return await self._list(_path(queue, kind), kind)

    async def get_rule(self, queue: str, kind: str, rule_id: str | int) -> Record:
        return await self.core.get_json(_path(queue, kind, rule_id))

    async def create_rule(self, queue: str, kind: str, body: Record) -> Record:
        return await self.core.post_json(_path(queue, kind), json=body)

    async def update_rule(
        self, queue: str, kind: str, rule_id: str | int, body: Record, version: int | None = None
    ) -> Record:
        """PATCH a trigger under its version lock (a stale one is refused, not applied), or a
        macro (no lock). Repeatable: a second send leaves it as the first."""
        params = {"version": version} if version is not None else None
        return await self.core.request_json(
            "PATCH", _path(queue, kind, rule_id), params=params, json=body, repeatable=True
        )

    async def delete_rule(self, queue: str, kind: str, rule_id: str | int) -> None:
        await self.core.delete(_path(queue, kind, rule_id), repeatable=True)
