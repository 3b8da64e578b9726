"""Test support: a whole org read back over HTTP, normalised so two orgs can be compared.

Ids differ between orgs, so everything is reduced to what a person would call the same record:
logins instead of uids, dictionary keys instead of numeric ids, times as instants, keys and
key references mapped back to the source's queues, attachment bytes as their sha256.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from datetime import datetime
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.transform import QueueMap

SYMMETRIC_LINKS = {"relates"}


def _instant(value: str | None) -> str | None:
    if not value:
        return None
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z").isoformat()


async def _sha(client: TrackerClient, key: str, attachment: dict[str, Any]) -> str:
    sink = io.BytesIO()
    await client.download_attachment(key, attachment["id"], attachment["name"], sink)
    return hashlib.sha256(sink.getvalue()).hexdigest()


async def org_snapshot(
    client: TrackerClient, queues: list[str], *, rename: dict[str, str] | None = None
) -> dict[str, Any]:
    """Every issue of `queues` with its sub-records; `rename` maps this org's queues back."""
    back = QueueMap(rename or {})
    users = {str(user["uid"]): user["login"] async for user in client.iter_users()}

    def login(ref: Any) -> str | None:
        return users.get(str(ref["id"]), f"uid:{ref['id']}") if isinstance(ref, dict) else None

    def key(ref: Any) -> str | None:
        return ref.get("key") if isinstance(ref, dict) else None

    issues: dict[str, Any] = {}
    for queue in queues:
        async for page in client.scroll_issues(query=f"Queue: {queue}"):
            for issue in page:
                issues[back.key(issue["key"])] = await _issue(client, issue, back, login, key)
    return issues


async def _issue(
    client: TrackerClient, issue: dict[str, Any], back: QueueMap, login: Callable, key: Callable
) -> dict[str, Any]:
    k = issue["key"]
    comments = [c async for c in client.iter_comments(k, expand="attachments")]
    attachments = await client.list_attachments(k)
    on_comments = {str(a["id"]) for c in comments for a in c.get("attachments") or []}
    blobs = {
        str(a["id"]): (a["name"], int(a["size"]), await _sha(client, k, a)) for a in attachments
    }
    worklogs = [w async for w in client.iter_worklogs(k)]
    links = await client.list_links(k)
    checklist = await client.list_checklist(k)
    remote = await client.list_remote_links(k)
    # Adding a checklist or a remote link is an ordinary edit (no import endpoint exists for
    # either), so it moves the target issue's updatedAt to the migration's time: those two
    # fields cannot match.
    edited = bool(checklist) or bool(remote)
    return {
        "summary": issue.get("summary"),
        "description": back.rewrite(issue.get("description")),
        "createdAt": _instant(issue.get("createdAt")),
        "updatedAt": "moved by an edit" if edited else _instant(issue.get("updatedAt")),
        "createdBy": login(issue.get("createdBy")),
        "updatedBy": "moved by an edit" if edited else login(issue.get("updatedBy")),
        "status": key(issue.get("status")),
        "type": key(issue.get("type")),
        "priority": key(issue.get("priority")),
        "resolution": key(issue.get("resolution")),
        "resolvedAt": _instant(issue.get("resolvedAt")),
        "assignee": login(issue.get("assignee")),
        "tags": sorted(issue.get("tags") or []),
        "followers": sorted(login(f) for f in issue.get("followers") or []),
        "comments": sorted(
            (
                _instant(c["createdAt"]),
                login(c.get("createdBy")),
                back.rewrite(c.get("text")),
                tuple(sorted(blobs[str(a["id"])] for a in c.get("attachments") or [])),
            )
            for c in comments
        ),
        "worklogs": sorted(
            (
                _instant(w["start"]),
                w["duration"],
                login(w.get("createdBy")),
                back.rewrite(w.get("comment")) or "",
            )
            for w in worklogs
        ),
        "attachments": sorted(
            (*blobs[str(a["id"])], _instant(a.get("createdAt")), login(a.get("createdBy")))
            for a in attachments
            if str(a["id"]) not in on_comments
        ),
        "links": sorted(
            (
                link["type"]["id"],
                "both" if link["type"]["id"] in SYMMETRIC_LINKS else link["direction"],
                back.key(link["object"]["key"]),
            )
            for link in links
        ),
        "checklist": [(item["text"], bool(item.get("checked"))) for item in checklist],
    }


async def org_structure(client: TrackerClient, queues: list[str]) -> dict[str, Any]:
    """The organisation objects, by name, as sorted lists: one made twice shows twice."""
    found: dict[str, list[Any]] = {"components": [], "versions": [], "local_fields": []}
    for queue in queues:
        found["components"] += [c["name"] for c in await client.list_queue_components(queue)]
        found["versions"] += [v["name"] for v in await client.list_queue_versions(queue)]
        found["local_fields"] += [f["key"] for f in await client.list_local_fields(queue)]
    boards = await client.list_boards()
    found["boards"] = [b["name"] for b in boards]
    found["columns"], found["sprints"] = [], []
    for board in boards:
        columns = await client.list_board_columns(board["id"])
        found["columns"] += [(board["name"], c["name"]) for c in columns]
        found["sprints"] += [s["name"] for s in await client.list_board_sprints(board["id"])]
    found["fields"] = [f["id"] for f in await client.list_fields() if f.get("type") == "global"]
    found["categories"] = [str(c["name"]) for c in await client.list_field_categories()]
    return {kind: sorted(names) for kind, names in found.items()}
