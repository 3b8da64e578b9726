"""The worklog search's windows: halved until each reply fits; a window that cannot fit even
at one millisecond leaves the issues living across it to their own listings."""

from __future__ import annotations

import json
import tracemalloc
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


def worklog(number: int) -> dict:
    """A worklog record as the search returns it (users and issue as nested objects)."""
    user = {"id": "1130000685377333", "display": "Dave Davis", "cloudUid": "62c3e802ddfb3daed1e5"}
    user = {**user, "passportUid": 1130000685377333, "self": "http://t.invalid/v3/users/1130"}
    issue = {"id": f"5d9118ccb7bbeb79fb95{number:06d}", "key": f"TEST-{number // 2}"}
    issue = {**issue, "display": "Migrate cron jobs", "self": f"http://t.invalid/v3/{number}"}
    return {
        "id": number,
        "self": f"http://t.invalid/v3/issues/TEST-{number // 2}/worklog/{number}",
        "issue": issue,
        "comment": "Reviewed the scheduler's retries",
        "createdBy": user,
        "updatedBy": user,
        "createdAt": "2023-01-05T16:33:10.324+0000",
        "updatedAt": "2023-01-05T16:33:10.324+0000",
        "start": "2023-01-04T15:48:01.468+0000",
        "duration": "PT1H15M",
    }


async def test_the_searched_records_wait_compactly_and_come_back_whole() -> None:
    """The search reads the whole organisation's worklogs before the drain takes them an
    issue at a time: held as parsed records, the 100 000-issue org's 150 000 took 500 MB of
    the extract's peak, 144 MB as JSON text. Held packed, a record takes under half its JSON
    text, and it comes back equal to what the service sent."""
    records = [worklog(number) for number in range(4000)]
    reply = json.dumps(records).encode()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=reply))
    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3", token="t", org_id="1", transport=transport
    )
    bulk = BulkWorklogs(client, clock=lambda: NOW)
    first = {"key": "TEST-0", "createdAt": "2023-01-01T00:00:00.000+0000"}
    first["updatedAt"] = "2023-02-01T00:00:00.000+0000"
    async with client:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            served = await bulk.worklogs_of(first)  # the search runs on the first need
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    text_bytes = len(reply) / len(records)
    assert held / len(records) < 0.5 * text_bytes, f"{held / len(records):.0f} B per record"
    assert served == records[:2]
    assert [await bulk.worklogs_of({**first, "key": "TEST-1999"})] == [records[3998:]]
