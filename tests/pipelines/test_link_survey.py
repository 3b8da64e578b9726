"""The links survey against the sandbox: every issue gets exactly the links its own listing
gives, while the issues the query and the audit leave out are not asked."""

from __future__ import annotations

from collections import Counter
from typing import Any

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
