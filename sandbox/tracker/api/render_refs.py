"""The references every shape is made of (``{self, id, display}`` and its kin), the
:class:`View` they are rendered in, and an issue's structure values as references."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from haul.sandbox.tracker.model import Dictionary, Issue, Org


@dataclass(frozen=True, slots=True)
class View:
    org: Org
    base: str  # absolute API base of the request, ending in /v3 or /v2

    def dictionary(self, path: str) -> Dictionary:
        return {
            "statuses": self.org.statuses,
            "issuetypes": self.org.issue_types,
            "priorities": self.org.priorities,
            "resolutions": self.org.resolutions,
        }[path]


def user_ref(view: View, uid: int | None) -> dict | None:
    user = view.org.users.get(uid) if uid is not None else None
    if user is None:
        return None
    return {
        "self": f"{view.base}/users/{user.uid}",
        "id": str(user.uid),
        "display": user.display,
        "cloudUid": user.cloud_uid,
        "passportUid": user.uid,
    }


def entry_ref(view: View, path: str, key: str | None) -> dict | None:
    entry = view.dictionary(path).by_key.get(key) if key else None
    if entry is None:
        return None
    return {
        "self": f"{view.base}/{path}/{entry.id}",
        "id": str(entry.id),
        "key": entry.key,
        "display": entry.name_en,
    }


def queue_ref(view: View, key: str) -> dict:
    queue = view.org.queues[key]
    return {
        "self": f"{view.base}/queues/{queue.key}",
        "id": str(queue.id),
        "key": queue.key,
        "display": queue.name,
    }


def issue_ref(view: View, value: Issue) -> dict:
    return {
        "self": f"{view.base}/issues/{value.key}",
        "id": value.id,
        "key": value.key,
        "display": value.summary,
    }


_REF_PATHS = {
    "components": "components",
    "fixVersions": "versions",
    "affectedVersions": "versions",
    "sprint": "sprints",
}
_USER_LISTS = ("votedBy", "favoritedBy", "access")


def structure_values(view: View, refs: tuple[tuple[str, object], ...]) -> dict:
    """Components, versions and sprints as ``{self, id, display}`` lists, user lists as user
    refs, custom field values under their field ids (a user field as a user ref)."""
    structure = view.org.structure
    body: dict = {}
    for name, raw in refs:
        if name in _REF_PATHS:
            path = _REF_PATHS[name]
            objects: dict[int, Any] = getattr(structure, path)
            body[name] = [
                {"self": f"{view.base}/{path}/{n}", "id": str(n), "display": objects[n].name}
                for n in raw  # type: ignore[attr-defined]
                if n in objects
            ]
        elif name in _USER_LISTS:
            body[name] = [user_ref(view, uid) for uid in raw]  # type: ignore[attr-defined]
        else:
            field = structure.fields.get(name) or structure.local_fields.get(name)
            user = field is not None and field.kind == "user" and isinstance(raw, int)
            body[name] = user_ref(view, raw) if user else raw  # type: ignore[arg-type]
    if "votedBy" in body:
        body["votes"] = len(body["votedBy"])
    return body
