"""Test support: a whole org read back over HTTP, normalised so two orgs can be compared.

Ids differ between orgs, so everything is reduced to what a person would call the same record:
logins instead of uids, dictionary keys instead of numeric ids, times as instants, keys and
key references mapped back to the source's queues, attachment bytes as their sha256.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.tracker.transform import QueueMap

SYMMETRIC_LINKS = {"relates"}
# a file referenced in text (either markup form; a link names the issue the file is in now,
# which a move changes), and an org's web host (`sandbox.web`)
FILE_IN_TEXT = re.compile(r"(?:/[A-Z][A-Z0-9_]*-\d+)?/attachments/(\w+)")
WEB_HOST = re.compile(r"https://(tracker|wiki)-\d+\.sandbox\.test")


def _text(value: str | None, back: QueueMap, files: dict[str, tuple[str, int, str]]) -> str | None:
    """A text as a person compares it: a file by its name and bytes, a web host by its
    service, keys mapped back."""
    if value is None:
        return None
    value = FILE_IN_TEXT.sub(
        lambda m: f"/attachments/{files[m.group(1)]}" if m.group(1) in files else m.group(0),
        value,
    )
    return back.rewrite(WEB_HOST.sub(lambda m: f"https://{m.group(1)}-web", value))


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
    # fields cannot match. So does writing a description or a comment again once the files it
    # shows are in the target.
    texts = [issue.get("description") or "", *(c.get("text") or "" for c in comments)]
    edited = bool(checklist) or bool(remote) or any(FILE_IN_TEXT.search(text) for text in texts)
    return {
        "summary": issue.get("summary"),
        "description": _text(issue.get("description"), back, blobs),
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
                _text(c.get("text"), back, blobs),
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
