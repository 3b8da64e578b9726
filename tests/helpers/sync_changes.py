"""Test support for sync tests: one change of each kind made at the source the way people
make them, through the plain API."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

from haul.connectors.tracker import TrackerClient

MIRROR = '[sync]\ndeletions = "mirror"\n'
SYNCED = ("updatedAt", "updatedBy", "resolvedAt")  # times of the change: each side's own


def without_sync_times(snapshot: dict[str, Any]) -> dict[str, Any]:
    """An org snapshot without the times each side gives a change of its own."""
    return {
        key: {k: v for k, v in issue.items() if k not in SYNCED}
        if isinstance(issue, dict)
        else issue
        for key, issue in snapshot.items()
    }


async def issues_of(client: TrackerClient, queue: str) -> list[dict[str, Any]]:
    async with aclosing(client.scroll_issues(query=f"Queue: {queue}", per_scroll=100)) as pages:
        return [issue async for page in pages for issue in page]


async def holding(client: TrackerClient, queue: str, listing: str, at_least: int) -> list[str]:
    """Keys of the queue's issues holding at least `at_least` records of `listing`."""
    found = []
    for issue in await issues_of(client, queue):
        records = await client.core.get_json(f"/issues/{issue['key']}/{listing}")
        if len([r for r in records if not r.get("attachments")]) >= at_least:
            found.append(issue["key"])
    return found


async def people_change_everything(source: TrackerClient) -> dict[str, str]:
    """One change of each kind at the source; returns which issue took which."""
    call = source.core.request
    dev = await issues_of(source, "DEV")
    opened = next(i["key"] for i in dev if i["status"]["key"] == "open")
    await source.execute_transition(opened, "inProgress")
    await source.execute_transition(opened, "resolved", {"resolution": "wontFix"})
    edited = next(i["key"] for i in await issues_of(source, "TEST"))
    await source.update_issue(edited, {"summary": "Renamed at the source"})
    talk = (await holding(source, "OPS", "comments", 2))[0]
    first, second = [
        c
        for c in await source.core.get_json(f"/issues/{talk}/comments")
        if not c.get("attachments")
    ][:2]
    await source.update_comment(talk, first["id"], {"text": "Said better, later"})
    await call("DELETE", f"/issues/{talk}/comments/{second['id']}")
    work = (await holding(source, "DEV", "worklog", 2))[0]
    one, two = (await source.core.get_json(f"/issues/{work}/worklog"))[:2]
    await source.update_worklog(work, one["id"], {"duration": "PT7H", "comment": "more"})
    await call("DELETE", f"/issues/{work}/worklog/{two['id']}")
    links = [(i["key"], link) for i in dev for link in await source.list_links(i["key"])]
    linked = links[0]
    await call("DELETE", f"/issues/{linked[0]}/links/{linked[1]['id']}")
    ends = [i["key"] for i in dev if i["key"] not in (opened, work, linked[0])][:2]
    await call(
        "POST", f"/issues/{ends[0]}/links", json={"relationship": "depends on", "issue": ends[1]}
    )
    await call(
        "POST",
        f"/issues/{edited}/attachments",
        params={"filename": "late.txt"},
        files={"file": ("late.txt", b"added at the source after the first run")},
    )
    filed = await _issue_file(source, "TEST", avoid=edited)
    await call("DELETE", f"/issues/{filed[0]}/attachments/{filed[1]}")
    wanders = next(i["key"] for i in dev if i["key"] not in (opened, work, *ends, linked[0]))
    moved = await source.move_issue(wanders, "OPS")
    return {"status": opened, "summary": edited, "comments": talk, "worklogs": work,
            "moved": str(moved["key"]), "files": filed[0]}  # fmt: skip


async def _issue_file(source: TrackerClient, queue: str, avoid: str) -> tuple[str, str]:
    """(issue key, attachment id) of a file on an issue itself, not on one of its comments."""
    for issue in await issues_of(source, queue):
        if issue["key"] == avoid:
            continue
        comments = await source.core.get_json(
            f"/issues/{issue['key']}/comments", params={"expand": "attachments"}
        )
        on_comments = {str(a["id"]) for c in comments for a in c.get("attachments") or []}
        for attachment in await source.list_attachments(issue["key"]):
            if str(attachment["id"]) not in on_comments:
                return issue["key"], str(attachment["id"])
    raise AssertionError(f"no issue of {queue} carries a file of its own")
