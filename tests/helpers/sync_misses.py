"""Test support for sync tests: the changes at the source a sync could miss (issue 39, item
3), made the way people make them, through the plain API."""

from __future__ import annotations

from typing import Any

from haul.connectors.tracker import TrackerClient
from tests.helpers.sync_changes import issues_of


async def _with_checklist(source: TrackerClient, avoid: set[str]) -> str:
    for queue in ("DEV", "OPS", "TEST"):
        for issue in await issues_of(source, queue):
            key = str(issue["key"])
            if key not in avoid and len(await source.list_checklist(key)) >= 2:
                return key
    raise AssertionError("no issue with a checklist of two items")


async def _with_file(source: TrackerClient, avoid: set[str]) -> tuple[str, dict[str, Any]]:
    """An issue and a file of its own (not a comment's)."""
    for issue in await issues_of(source, "DEV"):
        if issue["key"] in avoid:
            continue
        comments = await source.core.get_json(
            f"/issues/{issue['key']}/comments", params={"expand": "attachments"}
        )
        on_comments = {str(a["id"]) for c in comments for a in c.get("attachments") or []}
        for attachment in await source.list_attachments(issue["key"]):
            if str(attachment["id"]) not in on_comments:
                return str(issue["key"]), attachment
    raise AssertionError("no DEV issue carries a file of its own")


async def people_edit_what_is_easy_to_miss(source: TrackerClient) -> dict[str, str]:
    """A checklist edited (an item changed, one removed, one added), another emptied, a
    remote link added to an issue nothing else touches and one removed from another, a file's
    bytes replaced under its name."""
    call = source.core.request
    listed = await _with_checklist(source, set())
    first, second, *_ = await source.list_checklist(listed)
    await call(
        "PATCH", f"/issues/{listed}/checklistItems/{first['id']}", json={"text": "Said again"}
    )
    await call("DELETE", f"/issues/{listed}/checklistItems/{second['id']}")
    await source.add_checklist_items(listed, [{"text": "Added later", "checked": True}])
    emptied = await _with_checklist(source, {listed})
    await call("DELETE", f"/issues/{emptied}/checklistItems")
    linked = next(str(i["key"]) for i in await issues_of(source, "OPS") if str(i["key"]) != listed)
    app = (await source.list_applications())[0]
    await source.create_remote_link(
        linked, {"key": "haul/pull/39", "origin": app["id"], "relationship": "relates"}
    )
    unlinked = await _with_remote_link(source, {listed, emptied, linked})
    gone = (await source.list_remote_links(unlinked))[0]
    await call("DELETE", f"/issues/{unlinked}/remotelinks/{gone['id']}")
    filed, old = await _with_file(source, {listed, emptied, linked, unlinked})
    await call("DELETE", f"/issues/{filed}/attachments/{old['id']}")
    await call(
        "POST",
        f"/issues/{filed}/attachments",
        params={"filename": old["name"]},
        files={"file": (old["name"], b"new bytes under the same name")},
    )
    return {"checklist": listed, "emptied": emptied, "remote_link": linked, "unlinked": unlinked,
            "attachment": filed}  # fmt: skip


async def _with_remote_link(source: TrackerClient, avoid: set[str]) -> str:
    for queue in ("DEV", "OPS", "TEST"):
        for issue in await issues_of(source, queue):
            if issue["key"] not in avoid and await source.list_remote_links(issue["key"]):
                return str(issue["key"])
    raise AssertionError("no issue with a remote link")
