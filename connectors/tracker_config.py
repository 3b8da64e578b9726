"""A queue's configuration: the org's workflows, a queue's settings (its issue-type
configuration) and its permission scheme; `TrackerClient` has them all (the official SDK's
`Workflows` collection, `queue.update` and `queues.update_permissions`; the spec names neither
path).

A workflow's creation is not idempotent (an uncertain outcome raises AmbiguousWriteError,
never repeated here); the edits are (a queue's settings and permissions are set to what the
body says, a workflow's steps replaced), and are retried after a lost reply like a read.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from haul.connectors.http import ServiceClient

Record = dict[str, Any]


def _queue(queue: str) -> str:
    return f"/queues/{quote(str(queue), safe='')}"


class QueueConfigCalls(ServiceClient):
    """Workflows, queue settings and queue permissions (mixed into `TrackerClient`)."""

    async def list_workflows(self) -> list[Record]:
        """Every workflow of the org: ``id``, ``name``, ``initialAction`` and ``steps`` (a
        status each, with the actions leaving it)."""
        return await self._list("/workflows", "workflows")

    async def create_workflow(self, body: Record) -> Record:
        """POST /workflows/ {id, name, steps, initialAction}."""
        return await self.core.post_json("/workflows/", json=body)

    async def update_workflow(self, workflow: str, body: Record) -> Record:
        """PATCH a workflow's name, steps or initial action (repeatable)."""
        path = f"/workflows/{quote(str(workflow), safe='')}"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)

    async def update_queue(self, queue: str, body: Record) -> Record:
        """PATCH a queue's settings, e.g. ``issueTypesConfig`` (repeatable)."""
        return await self.core.request_json("PATCH", _queue(queue), json=body, repeatable=True)

    async def get_queue_scheme(self, queue: str) -> Record:
        """The queue's whole permission scheme: per code (``create``, ``write``, ``read``,
        ``grant``) its ``users``, ``groups`` and ``roles``."""
        return await self.core.get_json(f"{_queue(queue)}/permissions")

    async def update_queue_scheme(self, queue: str, body: Record) -> Record:
        """PATCH the scheme: per code, each holder list given replaces that code's holders
        (repeatable)."""
        path = f"{_queue(queue)}/permissions"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)
