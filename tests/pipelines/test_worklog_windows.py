"""The worklog search's windows: halved until each reply fits; a window that cannot fit even
at one millisecond leaves the issues living across it to their own listings."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.children.worklog_bulk import BulkWorklogs

NOW = datetime(2025, 1, 1, tzinfo=UTC)
CROWDED = "2024-06-01T12:00:00.000"  # more records at this millisecond than a reply holds


def record(key: str, created: str, number: int) -> dict:
    return {"id": number, "issue": {"key": key}, "createdAt": created + "+0000"}


def server(asked: list[tuple[str, str]]) -> httpx.MockTransport:
    early = [
        record("TEST-1", "2023-01-01T00:00:00.000", 1),
        record("TEST-1", "2023-02-01T00:00:00.000", 2),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        window = json.loads(request.content)["createdAt"]
        asked.append((window["from"], window["to"]))
        if window["from"] <= CROWDED <= window["to"]:
            return httpx.Response(
                400,
                json={
                    "errors": {},
                    "errorMessages": ["Request exceeds 3 items limit"],
                    "statusCode": 400,
                },
            )
        return httpx.Response(
            200, json=[r for r in early if window["from"] <= r["createdAt"][:23] <= window["to"]]
        )

    return httpx.MockTransport(handler)


async def test_windows_split_until_they_fit_and_an_uncovered_one_leaves_its_issues_alone() -> None:
    """The whole span is asked first, then halves; TEST-1 (done before the crowded instant)
    gets its two records from the search, TEST-2 (alive across it) is left to its listing,
    and so is TEST-3, updated since the search began."""
    asked: list[tuple[str, str]] = []
    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3", token="t", org_id="1", transport=server(asked)
    )
    bulk = BulkWorklogs(client, clock=lambda: NOW)
    async with client:
        first = await bulk.worklogs_of(
            {
                "key": "TEST-1",
                "createdAt": "2022-12-01T00:00:00.000+0000",
                "updatedAt": "2023-03-01T00:00:00.000+0000",
            }
        )
        second = await bulk.worklogs_of(
            {
                "key": "TEST-2",
                "createdAt": "2024-05-01T00:00:00.000+0000",
                "updatedAt": "2024-07-01T00:00:00.000+0000",
            }
        )
        third = await bulk.worklogs_of(
            {
                "key": "TEST-3",
                "createdAt": "2022-01-01T00:00:00.000+0000",
                "updatedAt": "2024-12-31T23:55:00.000+0000",
            }
        )
    assert asked[0] == ("1970-01-01T00:00:00.000", "2025-01-01T00:00:00.000")
    assert [r["id"] for r in first or []] == [1, 2]
    assert second is None and third is None
    assert [(w.start, w.end) for w in bulk.uncovered] == [
        (datetime(2024, 6, 1, 12, tzinfo=UTC),) * 2
    ]
    assert bulk.figures()["worklog_search_requests"] == len(asked) < 100
