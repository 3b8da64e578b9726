"""Test support for three-way sync tests: an edit at the source of every kind of issue field
the first load carries, and those fields as a person reads them, the same on either side."""

from __future__ import annotations

from typing import Any

from haul.connectors.tracker import TrackerClient

PLAIN = ("storyPoints", "customerName", "deadline", "start", "end")  # customerName: global
NAMED = ("components", "fixVersions", "affectedVersions", "sprint")
DURATIONS = ("originalEstimation", "estimation")
HOUR_MS = 3_600_000  # the API takes estimates in milliseconds


async def every_field_edit(source: TrackerClient, queue: str) -> dict[str, Any]:
    """An edit of each kind of carried field for an issue of `queue`: story points, a global
    and a queue-local custom field (`budget`), components, versions, a sprint, the planning
    dates and the estimates; structure named by its seeded names, sent as this org's ids."""
    components = await source.core.get_json(f"/queues/{queue}/components")
    versions = await source.core.get_json(f"/queues/{queue}/versions")
    board = next(b for b in await source.list_boards() if b["filter"].get("queue") == queue)
    sprints = await source.core.get_json(f"/boards/{board['id']}/sprints")

    def ids(objects: list[dict[str, Any]], *names: str) -> list[int]:
        return [int(o["id"]) for o in objects if o["name"] in names]

    return {
        "storyPoints": 13.0,
        "customerName": "Edited at the source",
        "budget": 4321.5,
        "components": ids(components, "Frontend", "Mobile"),
        "fixVersions": ids(versions, "3.0"),
        "affectedVersions": ids(versions, "2.0"),
        "sprint": ids(sprints, f"{queue} sprint 3"),
        "deadline": "2031-02-03",
        "start": "2031-01-01",
        "end": "2031-03-01",
        "originalEstimation": 16 * HOUR_MS,
        "estimation": 6 * HOUR_MS,  # spent: the sum of the issue's worklogs
    }


def seen(issue: dict[str, Any]) -> dict[str, Any]:
    """The fields `every_field_edit` edits, as a person reads them (structure by name, a
    local field by its key), the same on either side."""
    return (
        {name: issue.get(name) for name in PLAIN}
        | {name: sorted(str(ref["display"]) for ref in issue.get(name) or []) for name in NAMED}
        | {name: issue.get(name) for name in DURATIONS}
        | {"budget": next((v for k, v in issue.items() if k.rpartition("--")[2] == "budget"), None)}
    )
