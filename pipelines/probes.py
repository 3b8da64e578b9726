"""Ask the target whether a record is already there: how `in_flight` ledger rows are reconciled.

Each probe looks for the record by the identity DESIGN.md gives it (an issue by key, a comment
by time, author and text, a worklog by start, duration and author, a link by type, direction and
other issue, an attachment by name and size, a checklist by its items' text and state) among the
target's records that no other ledger row has claimed yet, so two identical records are still
counted as two.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.extract import parse_time
from haul.state.ledger import Ledger


@dataclass
class TargetProbe:
    client: TrackerClient
    ledger: Ledger
    target_uids: dict[str, str]  # target login -> target uid

    def claimed(self, parent: str, *entities: str) -> set[str]:
        return {
            str(row.target_id)
            for entity in entities
            for row in self.ledger.iter_rows(status="done", entity=entity, parent=parent)
        }

    def _author(self, login: str | None) -> str | None:
        return self.target_uids.get(login or "", login)

    async def issue(self, target_key: str) -> str | None:
        found = await self.client.find_issue(target_key)
        return str(found["key"]) if found else None

    async def comment(self, parent: str, target_key: str, body: dict[str, Any]) -> str | None:
        candidates = [c async for c in self.client.iter_comments(target_key, expand="")]
        return _first_unclaimed(
            candidates,
            self.claimed(parent, "comment"),
            lambda c: (
                same_time(c.get("createdAt"), body["createdAt"])
                and _ref_id(c.get("createdBy")) == self._author(body["createdBy"])
                and (c.get("text") or "") == body["text"]
            ),
        )

    async def worklog(self, parent: str, target_key: str, body: dict[str, Any]) -> str | None:
        candidates = [w async for w in self.client.iter_worklogs(target_key)]
        return _first_unclaimed(
            candidates,
            self.claimed(parent, "worklog"),
            lambda w: (
                same_time(w.get("start"), body["start"])
                and w.get("duration") == body["duration"]
                and _ref_id(w.get("createdBy")) == self._author(body["createdBy"])
            ),
        )

    async def attachment(self, parent: str, target_key: str, name: str, size: int) -> str | None:
        candidates = await self.client.list_attachments(target_key)
        return _first_unclaimed(
            candidates,
            self.claimed(parent, "attachment", "comment_attachment"),
            lambda a: a.get("name") == name and int(a.get("size") or 0) == int(size),
        )

    async def link(
        self, parent: str, target_key: str, link: dict[str, Any], other_key: str
    ) -> str | None:
        candidates = await self.client.list_links(target_key)
        symmetric = link["type"]["id"] == "relates"
        return _first_unclaimed(
            candidates,
            self.claimed(parent, "link"),
            lambda c: (
                c["type"]["id"] == link["type"]["id"]
                and (symmetric or c.get("direction") == link.get("direction"))
                and c["object"]["key"] == other_key
            ),
        )

    async def checklist(self, target_key: str, bodies: list[dict[str, Any]]) -> str | None:
        """The checklist is there when the target lists the same items in the same order."""
        items = await self.client.list_checklist(target_key)
        found = [(item.get("text"), bool(item.get("checked"))) for item in items]
        wanted = [(body["text"], body["checked"]) for body in bodies]
        return f"{target_key}/checklist" if found[-len(wanted) :] == wanted else None


def same_time(left: str | None, right: str | None) -> bool:
    if not left or not right:
        return False
    try:
        return parse_time(left) == parse_time(right)
    except ValueError:
        return left == right


def _ref_id(ref: Any) -> str | None:
    if isinstance(ref, dict):
        return str(ref.get("id"))
    return None if ref is None else str(ref)


def _first_unclaimed(
    candidates: Iterable[dict[str, Any]], claimed: set[str], matches: Any
) -> str | None:
    for candidate in candidates:
        if str(candidate["id"]) not in claimed and matches(candidate):
            return str(candidate["id"])
    return None
