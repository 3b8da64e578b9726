"""The sandbox driven by a client we did not write: the tracker's official Python SDK.

`yandex_tracker_client` (a dev dependency) talks to the real service; here it is pointed at
the sandbox's host. It scrolls by passing the scroll parameters through `find()` and following
the `Link: rel="next"` header, re-sending the body, exactly as it would against the service.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from haul.sandbox.server import start_sandbox
from tests.helpers.entity_snapshot import sdk_client


@pytest.fixture(scope="module")
def tiny() -> Iterator[dict[str, Any]]:
    with start_sandbox(size="tiny", seed=3) as running:
        yield running.info


@pytest.mark.slow
def test_the_sdk_scrolls_every_issue_of_a_large_org() -> None:
    """100 000 issues: past the 10 000 cap, so only a scroll reaches them all, each once."""
    with start_sandbox(size="large", seed=2) as running:
        client = sdk_client(running.info, "source")
        total = client.issues.find(count_only=True)
        keys = [
            issue.key
            for issue in client.issues.find(
                filter={}, scrollType="unsorted", perScroll=1000, scrollTTLMillis=120_000
            )
        ]
    assert total > 10_000
    assert len(keys) == len(set(keys)) == total


def test_the_sdk_pages_and_scrolls_a_queue_alike(tiny: dict[str, Any]) -> None:
    """Page pagination and a sorted scroll over the same query list the same issues."""
    client = sdk_client(tiny, "source")
    paged = {issue.key for issue in client.issues.find(query="Queue: TEST", per_page=10)}
    scrolled = [
        issue.key
        for issue in client.issues.find(
            query='Queue: TEST "Sort By": Updated ASC', scrollType="sorted", perScroll=7
        )
    ]
    assert len(paged) > 7
    assert sorted(scrolled) == sorted(paged)


def test_the_sdk_reads_an_issues_records(tiny: dict[str, Any]) -> None:
    """Comments, worklogs, changelog, links and attachments come back as SDK resources."""
    client = sdk_client(tiny, "source")
    issues = list(client.issues.find(query="Queue: TEST", per_page=50))
    comments = sum(len(list(issue.comments.get_all())) for issue in issues)
    worklogs = sum(len(list(issue.worklog)) for issue in issues)
    changes = sum(len(list(issue.changelog)) for issue in issues)
    links = sum(len(list(issue.links)) for issue in issues)
    assert comments and worklogs and links
    assert changes >= len(issues)  # every issue has at least its IssueCreated entry


def test_the_sdk_imports_with_the_documented_bodies(tiny: dict[str, Any]) -> None:
    """Issue, comment and worklog imports as the SDK sends them land in the target org."""
    client = sdk_client(tiny, "target")
    status = next(iter(client.statuses)).id
    issue = client.issues.import_object(
        queue="NEW",
        key="NEW-900",
        summary="Imported by the official SDK",
        createdAt="2024-01-01T00:00:00.000+0000",
        createdBy="alice",
        updatedAt="2024-02-01T00:00:00.000+0000",
        updatedBy="alice",
        status=status,
    )
    comment = issue.comments.import_object(
        text="hello", createdAt="2024-01-02T00:00:00.000+0000", createdBy="alice"
    )
    worklogs = issue.worklog.import_object(
        duration="PT1H",
        start="2024-01-02T00:00:00.000+0000",
        createdAt="2024-01-02T00:00:00.000+0000",
        createdBy="alice",
    )
    again = client.issues["NEW-900"]
    assert again.summary == "Imported by the official SDK"
    assert again.updatedAt == "2024-02-01T00:00:00.000+0000"
    assert [c.text for c in again.comments.get_all()] == ["hello"]
    assert comment.createdBy.id == again.createdBy.id
    assert len(worklogs) == 1 and [w.duration for w in again.worklog] == ["PT1H"]
