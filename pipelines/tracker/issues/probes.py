"""Ask the target tracker whether a record is already there, where no fingerprint says it.

A checklist is there when the target issue lists the same items in the same order (adding
one is an edit of the issue, so it has no identity of its own); the times every probe and
fingerprint compares are read by `pipelines.tracker.timefmt`. The sub-records with an identity of their own
(comments, worklogs, attachments, links) are found by their fingerprints
(`pipelines.tracker.issues.fingerprints`); an issue by its key and `unique` (`specs.find_issue`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
