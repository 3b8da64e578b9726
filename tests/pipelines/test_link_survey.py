"""The links survey against the sandbox: every issue gets exactly the links its own listing
gives, while the issues the query and the audit leave out are not asked."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx
import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.children.link_survey import LinkSurvey
from tests.helpers.haul_fixtures import client_for


async def test_survey_gives_each_issue_its_links_and_skips_only_the_unlinked(sandbox: Any) -> None:
    """With an audit of two issues per queue, each issue's links are those of its listing;
    the issues skipped are the unlinked ones the audit did not draw, two per queue fewer."""
    async with client_for(sandbox.info, "source") as client:
        issues = [issue async for page in client.scroll_issues() for issue in page]
        listed = {issue["key"]: await client.list_links(issue["key"]) for issue in issues}
        survey = LinkSurvey(client, sample=2, seed=7)
        served = {issue["key"]: await survey.links_of(issue) for issue in issues}
    assert served == listed
    unlinked = Counter(key.rsplit("-", 1)[0] for key, links in listed.items() if not links)
    assert sum(unlinked.values()) > 6
    assert survey.skipped == sum(max(0, n - 2) for n in unlinked.values())
    assert survey.figures()["link_shortcut_off"] == [] and survey.warnings == []


LINK = {"id": 1, "type": {"id": "relates"}}


async def links_of_test_1(search: httpx.Response) -> tuple[list[dict[str, Any]], LinkSurvey]:
    """TEST-1's links through a survey, on a service of one queue, TEST, whose links query
    answers `search` and whose every link listing answers LINK; and the survey."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/queues"):
            return httpx.Response(200, json=[{"key": "TEST"}])
        if request.url.path.endswith("/_search"):
            return search
        return httpx.Response(200, json=[LINK])

    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3", token="t", org_id="1",
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    issue = {"key": "TEST-1", "queue": {"key": "TEST"}, "updatedAt": "2020-01-01T00:00:00.000+0000"}
    survey = LinkSurvey(client)
    async with client:
        return await survey.links_of(issue), survey


async def test_a_refused_links_query_lists_every_issue_of_the_queue_with_a_warning() -> None:
    """A service that refuses the query (one naming too many queues, say) costs the shortcut,
    never a link: the issue is listed and the report says why."""

    refusal = {"errors": {}, "errorMessages": ["Query is too long"], "statusCode": 400}
    links, survey = await links_of_test_1(httpx.Response(400, json=refusal))
    assert links == [LINK]
    figures = survey.figures()
    assert figures["link_shortcut_off"] == ["TEST"]
    assert "search refused it" in figures["warnings"][0]


def one_queue_of(issues: int, listed: list[str]) -> httpx.MockTransport:
    """A service with one queue of `issues` issues, none of them with links: the links query
    returns none, and each link listing asked is noted in `listed`."""

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/queues"):
            return httpx.Response(200, json=[{"key": "BIG"}])
        if path.endswith("/_search"):
            linked = "Have Links To Queue" in json.loads(request.content)["query"]
            found = [] if linked else [{"key": f"BIG-{n}"} for n in range(1, issues + 1)]
            return httpx.Response(200, json=found)
        listed.append(path.split("/")[-2])
        return httpx.Response(200, json=[])

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("issues", "sample", "audited"),
    [(10, None, 10), (100, None, 20), (1000, None, 50), (10_000, None, 200), (1000, 3, 3)],
)
async def test_the_audit_lists_a_share_of_the_queue_with_a_floor_and_a_cap(
    issues: int, sample: int | None, audited: int
) -> None:
    """By default the audit lists 5% of a queue's issues, at least 20 (or all the query
    skipped, when fewer) and at most 200; a number in the setting wins."""
    listed: list[str] = []
    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3", token="t", org_id="1",
        transport=one_queue_of(issues, listed),
    )  # fmt: skip
    survey = LinkSurvey(client, sample=sample)
    old = "2020-01-01T00:00:00.000+0000"
    async with client:
        links = await survey.links_of({"key": "BIG-1", "queue": {"key": "BIG"}, "updatedAt": old})
    assert links == []
    assert len(listed) == len(set(listed)) == audited
    assert survey.figures()["link_audit_listed"] == audited
    assert survey.figures()["link_shortcut_off"] == []


async def test_an_issue_the_links_query_lists_without_its_key_turns_the_shortcut_off() -> None:
    """The links query lists an issue without its key: it cannot be told linked or not, so
    no issue of the queue is skipped (the one asked gets its links) and the warning names it."""

    keyless = [{"id": "abc", "updatedAt": "2020-01-01"}]
    links, survey = await links_of_test_1(httpx.Response(200, json=keyless))
    assert links == [LINK]
    assert survey.skipped == 0
    figures = survey.figures()
    assert figures["link_shortcut_off"] == ["TEST"]
    assert "TEST:id=abc without its key" in figures["warnings"][0]
