"""Test support: every record of a sandbox's target org that a migration writes, read through
the plain API (httpx, not haul's clients), so that "as it was before" can be compared.

Each record is named by its kind and where it lives ("comment" -> {"DEV-1/12", ...}): ids are
the target's own, so the same record read twice has the same name, and a record deleted and
made again has another.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import httpx

from haul.sandbox.server import RunningSandbox
from tests.helpers.sandbox_clients import client_for, drain_cursor, wiki_for

ISSUE_RECORDS = (
    ("comment", "comments"),
    ("worklog", "worklog"),
    ("attachment", "attachments"),
    ("link", "links"),
    ("remote_link", "remotelinks"),
    ("checklist_item", "checklistItems"),
)
ENTITY_KINDS = ("portfolio", "project", "goal")


def target_records(sandbox: RunningSandbox, wiki_roots: list[str]) -> dict[str, set[str]]:
    """kind -> the names of the target's records of that kind (issues' sub-records, the
    planning layer, the queues' objects, the pages under `wiki_roots` with theirs)."""
    found: dict[str, set[str]] = defaultdict(set)
    with client_for(sandbox, "target") as tracker:
        _issues(tracker, found)
        _entities(tracker, found)
        _organisation(tracker, found)
    with wiki_for(sandbox, "target") as wiki:
        for root in wiki_roots:
            _pages(wiki, root, found)
    return dict(found)


def _get(client: httpx.Client, path: str, **params: Any) -> Any:
    reply = client.get(path, params=params)
    assert reply.status_code == 200, f"{path}: {reply.status_code} {reply.text}"
    return reply.json()


def _issues(tracker: httpx.Client, found: dict[str, set[str]]) -> None:
    reply = tracker.post("/issues/_search", params={"perPage": 1000}, json={})
    assert reply.status_code == 200, reply.text
    for issue in reply.json():
        key = issue["key"]
        found["issue"].add(key)
        for kind, path in ISSUE_RECORDS:
            for item in _get(tracker, f"/issues/{key}/{path}"):
                found[kind].add(f"{key}/{item['id']}")


def _entities(tracker: httpx.Client, found: dict[str, set[str]]) -> None:
    for kind in ENTITY_KINDS:
        reply = tracker.post(f"/entities/{kind}/_search", params={"perPage": 1000}, json={})
        assert reply.status_code == 200, reply.text
        for entity in reply.json()["values"]:
            one = f"/entities/{kind}/{entity['id']}"
            found[kind].add(entity["id"])
            for item in _get(tracker, f"{one}/comments"):
                found["entity_comment"].add(f"{entity['id']}/{item['id']}")
            for item in _get(tracker, f"{one}/attachments"):
                found["entity_attachment"].add(f"{entity['id']}/{item['id']}")
            for item in _get(tracker, f"{one}/links"):
                found["entity_link"].add(f"{entity['id']}/{item['id']}")
            fields = _get(tracker, one, fields="checklistItems").get("fields") or {}
            for item in fields.get("checklistItems") or []:
                found["entity_checklist_item"].add(f"{entity['id']}/{item['id']}")


def _organisation(tracker: httpx.Client, found: dict[str, set[str]]) -> None:
    for kind in ("filters", "dashboards", "boards", "components", "versions"):
        for item in _get(tracker, f"/{kind}"):
            found[kind].add(str(item["id"]))
    for board in found["boards"]:
        for column in _get(tracker, f"/boards/{board}/columns"):
            found["board_column"].add(f"{board}/{column['id']}")
    for queue in _get(tracker, "/queues", perPage=1000):
        for action in _get(tracker, f"/queues/{queue['key']}/autoactions"):
            found["autoaction"].add(f"{queue['key']}/{action['id']}")


def _pages(wiki: httpx.Client, root: str, found: dict[str, set[str]]) -> None:
    reply = wiki.get("/pages", params={"slug": root})
    if reply.status_code == 404:
        return
    assert reply.status_code == 200, reply.text
    pages = [reply.json(), *drain_cursor(wiki, f"/pages/{reply.json()['id']}/descendants")]
    for page in pages:
        page_id = page["id"]
        found["wiki_page"].add(f"{page.get('slug')}#{page_id}")
        for item in drain_cursor(wiki, f"/pages/{page_id}/attachments"):
            found["wiki_attachment"].add(f"{page_id}/{item['id']}")
        for item in drain_cursor(wiki, f"/pages/{page_id}/grids"):
            found["wiki_grid"].add(f"{page_id}/{item['id']}")
        for item in drain_cursor(wiki, f"/pages/{page_id}/comments"):
            found["wiki_comment"].add(f"{page_id}/{item['id']}")
