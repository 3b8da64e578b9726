"""A first migration reads links by query and worklogs by window, and loses nothing by it:
every link and worklog of the source is in the target, counted through the plain API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config
from tests.helpers.org_snapshot import org_snapshot

MAPPING = {"TEST": "NEW"}


async def links_and_worklogs(info: dict[str, Any], queues: list[str]) -> tuple[dict, dict]:
    """Per source issue key, its links and worklogs in the source and in the target."""
    back = {target: source for source, target in MAPPING.items()}
    async with client_for(info, "source") as source, client_for(info, "target") as target:
        before = await org_snapshot(source, queues)
        after = await org_snapshot(target, [MAPPING.get(q, q) for q in queues], rename=back)
    pick = lambda org: {k: (i["links"], i["worklogs"]) for k, i in org.items()}  # noqa: E731
    return pick(before), pick(after)


def add_unlinked_issue(info: dict[str, Any]) -> str:
    """An issue with no link (every seeded one of the tiny org has some)."""
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    reply = httpx.post(
        f"{info['tracker']}/issues", json={"queue": "DEV", "summary": "alone"}, headers=headers
    )
    assert reply.status_code == 201, reply.text
    return str(reply.json()["key"])


async def test_links_by_query_skip_unlinked_issues_and_lose_nothing(
    sandbox: Any, tmp_path: Path
) -> None:
    """The query finds every linked issue: the shortcut stays on, the issue without links is
    not asked, and the target holds every link and worklog of the source."""
    info = sandbox.info
    add_unlinked_issue(info)
    queues = source_queues(info)
    # no slack for the clocks: the issue was made a moment ago, on this machine's clock; no
    # audit, else the sample would list the one issue the query does not return
    tuning = "\n[tuning]\nlookback_minutes = 0\nlink_audit_sample = 0\n"
    config = load_config(write_config(tmp_path, info, queues=queues, extra=tuning))

    summary = await run_all(config, all_services(), environ=environ(info))

    assert summary.complete and summary.failed == 0
    details = summary.details
    assert details["link_shortcut_off"] == [] and details["link_listings_skipped"] >= 1
    assert details["worklogs_from_search"] > 0 and details["worklog_search_requests"] == 1
    before, after = await links_and_worklogs(info, queues)
    assert after == before


async def test_audit_turns_the_shortcut_off_where_the_query_missed_links(
    sandbox: Any, tmp_path: Path
) -> None:
    """A search that misses linked issues (as one blind to a queue the token cannot read
    would): the audit's sample finds links outside it, the shortcut is off for those queues
    with a warning in the report, and not one link is lost."""
    info = sandbox.info
    sandbox.set_faults("links_missed:0.5")
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues))

    summary = await run_all(config, all_services(), environ=environ(info))

    assert summary.complete and summary.failed == 0
    details = summary.details
    assert details["link_shortcut_off"] == sorted(queues)
    assert details["link_listings_skipped"] == 0
    assert any("links by query off for queue" in line for line in details["warnings"])
    before, after = await links_and_worklogs(info, queues)
    assert after == before


async def test_worklogs_by_window_stage_what_the_issue_listings_would(
    sandbox: Any, tmp_path: Path
) -> None:
    """With a cap that forces the windows to split, the search stages exactly the worklogs
    the per-issue listings stage."""
    info = sandbox.info
    queues = source_queues(info)
    plain = load_config(
        write_config(
            tmp_path / "plain", info, queues=queues, extra="\n[tuning]\nbulk_reads = false\n"
        )
    )
    await extract(plain, all_services(), environ=environ(info))
    sandbox.set_faults("worklog_cap:7")
    bulk = load_config(write_config(tmp_path / "bulk", info, queues=queues))

    stats = await extract(bulk, all_services(), environ=environ(info))

    assert stats.details["worklog_search_requests"] > 3
    assert stats.details["worklog_issues_listed_alone"] == 0
    staged = []
    for config in (plain, bulk):
        with StagingStore.open(config.staging_path) as store:
            staged.append({r.source_id: r.raw for r in store.iter_records("worklog")})
    assert staged[0] and staged[1] == staged[0]
