"""The tracker's issue scroll turns a page into rows and a watermark a later run can read; the
issue drain asks only for the listings an issue (or its org) says it may have."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.children.drain import IssueDrain
from haul.pipelines.tracker.issues.scroll import IssueScroll, since_watermark
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def scroll() -> IssueScroll:
    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3",
        token="t",
        org_id="1",
        transport=httpx.MockTransport(lambda request: httpx.Response(500)),
    )
    return IssueScroll(client, "TEST")


def test_an_issue_without_a_key_is_a_problem_not_a_row() -> None:
    """Nothing could name it in the store: it is reported under its queue and id."""
    page = scroll()._page(
        [
            {"key": "TEST-1", "updatedAt": "2024-01-01T10:00:00.000+0000"},
            {"id": "abc", "updatedAt": "2024-01-01T11:00:00.000+0000"},
        ]
    )
    assert [row["source_id"] for row in page.rows] == ["TEST-1"]
    assert page.problems == [("issue", "TEST:id=abc", "the tracker listed an issue without a key")]
    assert page.checkpoint == {"updated_at": "2024-01-01T10:00:00.000+0000", "key": "TEST-1"}


def test_the_watermark_is_written_in_the_trackers_own_form() -> None:
    """An update time in another ISO form is staged as it came; the watermark is normalised."""
    page = scroll()._page([{"key": "TEST-2", "updatedAt": "2024-01-01T12:30:00+02:00"}])
    assert page.rows[0]["updated_at"] == "2024-01-01T12:30:00+02:00"
    assert page.checkpoint == {"updated_at": "2024-01-01T10:30:00.000+0000", "key": "TEST-2"}
    assert since_watermark(page.checkpoint, timedelta(minutes=10)) == "2024-01-01T10:20:00.000+0000"


def test_an_unreadable_update_time_keeps_the_last_readable_watermark() -> None:
    """Garbage never becomes the watermark: the page's last readable time does."""
    page = scroll()._page(
        [
            {"key": "TEST-3", "updatedAt": "2024-01-02T00:00:00.000+0000"},
            {"key": "TEST-4", "updatedAt": "yesterday"},
        ]
    )
    assert [row["source_id"] for row in page.rows] == ["TEST-3", "TEST-4"]
    assert page.checkpoint == {"updated_at": "2024-01-02T00:00:00.000+0000", "key": "TEST-3"}


def test_an_issue_is_asked_only_for_the_listings_it_has() -> None:
    """Counters at zero, no time spent, no attachment refs: changelog, links and remote links
    only (nothing on an issue says whether it has links or remote links); no remote links
    when the org has no application for one to point into."""
    from haul.pipelines.tracker.children.drain import checklist_of, listings_needed

    bare = {
        "key": "TEST-1",
        "commentWithoutExternalMessageCount": 0,
        "commentWithExternalMessageCount": 0,
        "attachments": [],
    }
    assert listings_needed(bare) == ["changelog", "link", "remote_link"]
    busy = {
        **bare,
        "commentWithExternalMessageCount": 2,
        "spent": "PT1H",
        "attachments": [{"id": "9"}],
    }
    assert listings_needed(busy) == [
        *("changelog", "link", "remote_link", "comment", "worklog", "attachment")
    ]
    assert listings_needed(bare, changelog=False) == ["link", "remote_link"]  # changelog = false
    assert listings_needed(bare, changelog=False, remote_links=False) == ["link"]
    assert checklist_of({**bare, "checklistItems": [{"text": "a", "checked": True}]}) == [
        {"text": "a", "checked": True}
    ]


def test_an_issue_that_says_nothing_is_asked_for_everything_it_might_have() -> None:
    """Without counters or embedded refs (an older reply shape), nothing is assumed away."""
    from haul.pipelines.tracker.children.drain import listings_needed

    assert listings_needed({"key": "TEST-2", "spent": "P1D"}) == [
        "changelog",
        "link",
        "remote_link",
        "comment",
        "worklog",
        "attachment",
    ]


@pytest.mark.parametrize(
    ("applications", "listed"),
    [
        (httpx.Response(200, json=[]), False),  # no application: no remote link can exist
        (httpx.Response(200, json=[{"id": "ru.yandex.github", "name": "GitHub"}]), True),
        (httpx.Response(404, json={"errorMessages": ["no such path"]}), True),  # unknown
    ],
)
async def test_remote_links_are_asked_for_only_when_the_org_has_an_application(
    tmp_path: Path, applications: httpx.Response, listed: bool
) -> None:
    """The source's applications are listed once however many issues drain; with none, no
    issue is asked for remote links; when they cannot be listed, every issue is."""
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path.removeprefix("/v3"))
        if request.url.path.endswith("/applications"):
            return applications
        return httpx.Response(200, json=[])

    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3",
        token="t",
        org_id="1",
        transport=httpx.MockTransport(handler),
    )
    bare = {"commentWithoutExternalMessageCount": 0, "commentWithExternalMessageCount": 0}
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records(
            "issue",
            [{"source_id": f"TEST-{n}", "raw": {"key": f"TEST-{n}", **bare}} for n in (1, 2, 3)],
        )
        drain = IssueDrain(client, store, changelog=False)
        async with client:
            for issue in store.iter_records("issue"):
                children = await drain.fetch(issue)
                assert children["remote_link"] == []
    assert asked.count("/applications") == 1
    remote = [path for path in asked if path.endswith("/remotelinks")]
    assert remote == ([f"/issues/TEST-{n}/remotelinks" for n in (1, 2, 3)] if listed else [])


def test_a_page_never_moves_the_watermark_past_the_sources_now() -> None:
    """An issue stamped a day after the source's clock: staged, but the watermark stops at
    the source's now, so a later run still asks for what changes after it."""
    source_now = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    future = replace(scroll(), now=lambda: source_now)
    page = future._page([{"key": "TEST-9", "updatedAt": "2024-01-02T12:00:00.000+0000"}])
    assert [row["source_id"] for row in page.rows] == ["TEST-9"]
    assert page.checkpoint == {"updated_at": "2024-01-01T12:00:00.000+0000", "key": "TEST-9"}


def test_an_issue_without_a_key_holds_the_watermark() -> None:
    """The issues after a keyless one are staged, but the watermark stays at the keyless
    one's time, so the next run lists it again; its key back, its problem is settled."""
    page = scroll()._page(
        [
            {"key": "TEST-1", "updatedAt": "2024-01-01T10:00:00.000+0000"},
            {"id": "abc", "updatedAt": "2024-01-01T11:00:00.000+0000"},
            {"key": "TEST-2", "id": "def", "updatedAt": "2024-01-01T12:00:00.000+0000"},
        ]
    )
    assert [row["source_id"] for row in page.rows] == ["TEST-1", "TEST-2"]
    assert page.checkpoint == {"updated_at": "2024-01-01T11:00:00.000+0000", "key": "TEST-2"}
    whole = scroll()._page([{"key": "TEST-7", "id": "abc", "updatedAt": "2024-01-03"}])
    assert ("issue", "TEST:id=abc") in whole.settled


async def test_a_watermark_left_in_the_future_reads_the_queue_whole_once() -> None:
    """A store whose watermark an older haul carried past the source's now (its `Date`):
    the changes since its true place are unknown, so the scroll asks for the whole queue."""
    queries: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.content:  # a search, not the clock's first reply
            queries.append(json.loads(request.content)["query"])
        return httpx.Response(200, json=[], headers={"Date": "Mon, 01 Jan 2024 12:00:00 GMT"})

    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3", token="t", org_id="1",
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    await client.myself()  # the source's clock, from its reply
    ahead = {"updated_at": "2024-01-02T12:00:00.000+0000", "key": "TEST-9"}
    async with client:
        pages = [page async for page in IssueScroll(client, "TEST").pages(lambda: ahead)]

    assert pages == []
    assert queries[-1] == 'Queue: TEST "Sort By": Updated ASC'
