"""Projects, portfolios and goals read through the official SDK (`client.project`,
`.portfolio`, `.goal`), as the migration carries them: for comparing two orgs."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Any

KINDS = ("portfolio", "project", "goal")
FIELDS = (
    "summary,description,lead,entityStatus,start,end,teamUsers,clients,followers,tags,"
    "teamAccess,parentEntity,checklistItems"
)
Key = tuple[str, str]  # (type, summary): the summaries of the seeded entities are unique


def sdk_client(info: dict[str, Any], org: str, token: str = "admin") -> Any:
    """The official SDK's client of `org` in the sandbox `info`, as `token` ("admin", "user")."""
    from yandex_tracker_client import TrackerClient  # a dev dependency, not our own module

    host = info["tracker"].rsplit("/v3", 1)[0]
    return TrackerClient(
        token=info["tokens"][token], org_id=info["orgs"][org], base_url=host, retries=1
    )


def counted(client: Any) -> Counter[Key]:
    """How many entities of each type and summary the client reads (a copy made twice: 2)."""
    return Counter((kind, e["fields"]["summary"]) for kind in KINDS for e in found(client, kind))


# -- reading an org through the SDK -------------------------------------------------------------


def _name(ref: Any) -> str | None:
    """A person or an entity by its display name (a person's is the same in both orgs)."""
    return ref.get("display") if isinstance(ref, dict) else None


def found(client: Any, kind: str) -> list[dict[str, Any]]:
    """Every entity of `kind` the client's token may read, as the search returns it."""
    return [
        ref.as_dict() for ref in getattr(client, kind).find(fields=FIELDS, per_page=100)["values"]
    ]


def readable(client: Any) -> set[Key]:
    """Every entity the client's token may read, by type and summary."""
    return {(kind, e["fields"]["summary"]) for kind in KINDS for e in found(client, kind)}


def _link(link: dict[str, Any]) -> tuple[str, str, str]:
    end = link["linkFieldValues"]
    other = end["key"] if link["entityType"] == "issue" else end["summary"]
    return (link["type"], link["entityType"], other)


def entities(client: Any) -> dict[Key, dict[str, Any]]:
    """Every entity the admin reads, as the migration carries it, by type and summary."""
    snapshot = {}
    for kind in KINDS:
        for entity in found(client, kind):
            fields = entity["fields"]
            parents = fields.get("parentEntity") or {}
            handle = getattr(client, kind).get(entity["id"])
            snapshot[(kind, fields["summary"])] = {
                "createdAt": entity["createdAt"],
                "createdBy": _name(entity["createdBy"]),
                "status": fields.get("entityStatus"),
                "lead": _name(fields.get("lead")),
                **{
                    name: sorted(_name(p) or "" for p in fields.get(name) or [])
                    for name in ("teamUsers", "clients", "followers")
                },
                "start": fields.get("start"),
                "end": fields.get("end"),
                "description": fields.get("description"),
                "tags": sorted(fields.get("tags") or []),
                "teamAccess": bool(fields.get("teamAccess")),
                "parent": _name(parents.get("primary")),
                "secondary": sorted(_name(p) or "" for p in parents.get("secondary") or []),
                "checklist": [
                    (
                        i["text"],
                        i["checked"],
                        _name(i.get("assignee")),
                        (i.get("deadline") or {}).get("date"),
                    )
                    for i in fields.get("checklistItems") or []
                ],
                "comments": [
                    (c.text, c.createdBy.id, c.createdAt) for c in handle.comments.get_all()
                ],
                "files": sorted((a.name, a.size) for a in handle.attachments.get_all()),
                "links": sorted(_link(link) for link in handle.links.get_all()),
            }
    return snapshot


# -- what the target should read ----------------------------------------------------------------


def _new_keys(text: str | None) -> str | None:
    return None if text is None else re.sub(r"\bTEST-(\d+)\b", r"NEW-\1", text)


def as_migrated(client: Any, seen: dict[str, Any]) -> dict[str, Any]:
    """A source entity as the target should read it: TEST's keys are NEW's, and each comment
    is the migrating admin's, its text under a line naming its original author and time."""

    @cache
    def login(uid: str) -> str:
        return str(client.users.get(uid).login)

    return {
        **seen,
        "description": _new_keys(seen["description"]),
        "comments": [
            f"Originally by {login(uid)} at {at}:\n\n{_new_keys(text)}"
            for text, uid, at in seen["comments"]
        ],
        "links": sorted((t, kind, _new_keys(other) or "") for t, kind, other in seen["links"]),
    }


def unlike_the_source(source: Any, target: Any) -> dict[Key, dict[str, Any]]:
    """What the target reads of each source entity where it differs from the source's
    migrated (field -> (wanted, found)); an entity missing or made twice: {"copies": ...}."""
    wrong: dict[Key, dict[str, Any]] = {}
    copies = counted(target)
    for key in counted(source) | copies:
        if copies[key] != 1:
            wrong[key] = {"copies": (1, copies[key])}
    before, after = entities(source), entities(target)
    for key, seen in before.items():
        if key in wrong or key not in after:
            continue
        moved = dict(after[key], comments=[text for text, _, _ in after[key]["comments"]])
        wanted = as_migrated(source, seen)
        if moved != wanted:
            wrong[key] = {f: (wanted[f], moved.get(f)) for f in wanted if wanted[f] != moved.get(f)}
    return wrong


def change_at_source(source: Any) -> None:
    """One change of each kind a later run carries, at the source: a project's status,
    description and tags; one of its comments edited and one added; an item of its checklist
    checked and one added; another project's checklist emptied; a goal renamed and made
    team-only."""
    project = _one(source, "project", "Testing roadmap")
    project.update(
        fields={"entityStatus": "at_risk", "description": "Moved to TEST-3", "tags": ["q3"]}
    )
    comment = next(iter(project.comments.get_all()))
    comment.update(text=f"{comment.text} (edited)")
    project.comments.create(text="Added after the migration")
    items = _one(source, "project", "Testing roadmap").fields["checklistItems"]
    unchecked = next(item for item in items if not item["checked"])
    project.checklist_items.update([{"id": unchecked["id"], "checked": True}])
    project.checklist_items.create(text="Added after the migration")
    emptied = next(
        e for e in found(source, "project")
        if e["fields"].get("checklistItems") and e["fields"]["summary"] != "Testing roadmap"
    )  # fmt: skip
    source.project.get(emptied["id"]).checklist_items.delete()
    goal = _one(source, "goal", "Halve onboarding time")
    goal.update(fields={"summary": "Halve onboarding time again", "teamAccess": True})


def _one(client: Any, kind: str, summary: str) -> Any:
    """The entity of `kind` named `summary`, with its fields, through the SDK."""
    (entity,) = [e for e in found(client, kind) if e["fields"]["summary"] == summary]
    return getattr(client, kind).get(entity["id"], fields="summary,checklistItems")
