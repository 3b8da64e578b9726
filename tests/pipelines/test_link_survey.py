"""The links survey against the sandbox: every issue gets exactly the links its own listing
gives, while the issues the query and the audit leave out are not asked."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.issues.link_survey import LinkSurvey
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


async def test_a_refused_links_query_lists_every_issue_of_the_queue_with_a_warning() -> None:
    """A service that refuses the query (one naming too many queues, say) costs the shortcut,
    never a link: the issue is listed and the report says why."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/queues"):
            return httpx.Response(200, json=[{"key": "TEST"}])
        if request.url.path.endswith("/_search"):
            refusal = {"errors": {}, "errorMessages": ["Query is too long"], "statusCode": 400}
            return httpx.Response(400, json=refusal)
        return httpx.Response(200, json=[{"id": 1, "type": {"id": "relates"}}])

    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3",
        token="t",
        org_id="1",
        transport=httpx.MockTransport(handler),
    )
    issue = {"key": "TEST-1", "queue": {"key": "TEST"}, "updatedAt": "2020-01-01T00:00:00.000+0000"}
    survey = LinkSurvey(client)
    async with client:
        links = await survey.links_of(issue)
    assert links == [{"id": 1, "type": {"id": "relates"}}]
    figures = survey.figures()
    assert figures["link_shortcut_off"] == ["TEST"]
    assert "search refused it" in figures["warnings"][0]
