"""Ask the target tracker whether a record is already there, where no fingerprint says it.

A checklist is there when the target issue lists the same items in the same order (adding
one is an edit of the issue, so it has no identity of its own); the times every probe and
fingerprint compares are parsed here. The sub-records with an identity of their own
(comments, worklogs, attachments, links) are found by their fingerprints
(`pipelines.tracker.fingerprints`); an issue by its key and `unique` (`specs.find_issue`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from haul.connectors.tracker import TrackerClient

Unclaimed = Callable[[str], bool]


@dataclass
class TargetProbe:
    """The probes of one target org that no fingerprint expresses (see `fingerprints`)."""

    client: TrackerClient

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
