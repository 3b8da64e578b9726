"""The tracker's deletions `haul undo` sends; `TrackerClient` has them all.

Each answers True once the record is deleted, False when the tracker answers 404 (it was
deleted already: a repeat after a lost reply, or a record that went with another). A DELETE
is repeatable: sent again, it deletes nothing more. The tracker has no deletion for issues,
dashboards, queues, fields or dictionary values (spec: "no delete operation exists").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from haul.connectors.errors import NotFoundError
from haul.connectors.http import ServiceClient


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


def _entity(kind: str, entity_id: str) -> str:
    return f"/entities/{_segment(kind)}/{_segment(entity_id)}"


class RemovalCalls(ServiceClient):
    """The deletions (mixed into `TrackerClient`)."""

    async def _delete(self, path: str, params: dict[str, Any] | None = None) -> bool:
        try:
            await self.core.delete(path, params=params, repeatable=True)
        except NotFoundError:
            return False
        return True

    async def delete_remote_link(self, key: str, link_id: str) -> bool:
        return await self._delete(f"/issues/{_segment(key)}/remotelinks/{_segment(link_id)}")

    async def delete_entity(self, kind: str, entity_id: str) -> bool:
        """DELETE /entities/{type}/{id} (its board, if any, stays: withBoard false)."""
        return await self._delete(_entity(kind, entity_id), {"withBoard": "false"})

    async def delete_entity_comment(self, kind: str, entity_id: str, comment_id: str) -> bool:
        return await self._delete(f"{_entity(kind, entity_id)}/comments/{_segment(comment_id)}")

    async def delete_entity_checklist(self, kind: str, entity_id: str) -> bool:
        """DELETE /entities/{type}/{id}/checklistItems: the entity's whole checklist."""
        return await self._delete(f"{_entity(kind, entity_id)}/checklistItems")

    async def delete_entity_attachment(self, kind: str, entity_id: str, file_id: str) -> bool:
        return await self._delete(f"{_entity(kind, entity_id)}/attachments/{_segment(file_id)}")

    async def delete_entity_link(self, kind: str, entity_id: str, right: str) -> bool:
        """DELETE /entities/{type}/{id}/links?right=: the link to that entity id or issue key."""
        return await self._delete(f"{_entity(kind, entity_id)}/links", {"right": right})

    async def delete_filter(self, filter_id: str) -> bool:
        return await self._delete(f"/filters/{_segment(filter_id)}")

    async def delete_autoaction(self, queue: str, action_id: str) -> bool:
        return await self._delete(f"/queues/{_segment(queue)}/autoactions/{_segment(action_id)}")

    async def delete_queue_rule(self, queue: str, kind: str, rule_id: str) -> bool:
        """DELETE /queues/{queue}/{kind}/{id}: a trigger (`kind` "triggers") or a macro."""
        return await self._delete(f"/queues/{_segment(queue)}/{kind}/{_segment(rule_id)}")

    async def delete_board(self, board_id: str) -> bool:
        """DELETE /boards/{id}: its sprints go with it."""
        return await self._delete(f"/boards/{_segment(board_id)}")

    async def delete_board_column(self, board_id: str, column_id: str) -> bool:
        return await self._delete(f"/boards/{_segment(board_id)}/columns/{_segment(column_id)}")

    async def delete_component(self, component_id: str) -> bool:
        return await self._delete(f"/components/{_segment(component_id)}")

    async def delete_version(self, version_id: str) -> bool:
        return await self._delete(f"/versions/{_segment(version_id)}")
