"""Ask the target tracker whether a record is already there: the specs' `find` half.

Each probe looks for the record by the identity DESIGN.md gives it (an issue by key, a comment
by time, author and text, a worklog by start, duration and author, a link by type, direction
and other issue, an attachment by name and size, a checklist by its items' text and state)
among the target's records that no other ledger row holds (`unclaimed`), so two identical
records are still counted as two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from haul.connectors.tracker import TrackerClient

Unclaimed = Callable[[str], bool]


@dataclass
class TargetProbe:
    """The probes of one target org; `target_uids` maps a target login to its uid."""

    client: TrackerClient
    target_uids: dict[str, str]

    def _author(self, login: str | None) -> str | None:
        return self.target_uids.get(login or "", login)

    async def comment(
        self, target_key: str, body: dict[str, Any], unclaimed: Unclaimed
    ) -> str | None:
        """A comment with the same time, author and text."""
        candidates = [c async for c in self.client.iter_comments(target_key, expand="")]
        return _first(
            candidates,
            unclaimed,
            lambda c: (
                same_time(c.get("createdAt"), body["createdAt"])
                and _ref_id(c.get("createdBy")) == self._author(body["createdBy"])
                and (c.get("text") or "") == body["text"]
            ),
        )

    async def worklog(
        self, target_key: str, body: dict[str, Any], unclaimed: Unclaimed
    ) -> str | None:
        """A worklog with the same start, duration and author."""
        candidates = [w async for w in self.client.iter_worklogs(target_key)]
        return _first(
            candidates,
            unclaimed,
            lambda w: (
                same_time(w.get("start"), body["start"])
                and w.get("duration") == body["duration"]
                and _ref_id(w.get("createdBy")) == self._author(body["createdBy"])
            ),
        )

    async def attachment(
        self, target_key: str, name: str, size: int, unclaimed: Unclaimed
    ) -> str | None:
        """An attachment with the same name and size."""
        candidates = await self.client.list_attachments(target_key)
        return _first(
            candidates,
            unclaimed,
            lambda a: a.get("name") == name and int(a.get("size") or 0) == int(size),
        )

    async def link(
        self, target_key: str, link: dict[str, Any], other_key: str, unclaimed: Unclaimed
    ) -> str | None:
        """A link of the same type and direction to the same other issue."""
        candidates = await self.client.list_links(target_key)
        symmetric = link["type"]["id"] == "relates"
        return _first(
            candidates,
            unclaimed,
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


def parse_time(value: str) -> datetime:
    """A timestamp as an aware datetime: the tracker's `2024-01-01T10:00:00.000+0000`, or any
    other ISO 8601 form (`Z`, `+00:00`, no fraction); one without a zone is taken as UTC.

    ValueError for anything else.
    """
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def same_time(left: str | None, right: str | None) -> bool:
    """Two timestamps name the same instant (written in any zone)."""
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


def _first(candidates: Iterable[dict[str, Any]], unclaimed: Unclaimed, matches: Any) -> str | None:
    for candidate in candidates:
        if matches(candidate) and unclaimed(str(candidate["id"])):
            return str(candidate["id"])
    return None
