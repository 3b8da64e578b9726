"""The tracker's export tables: issues, comments, worklogs, changelog entries, links,
attachments (metadata; the bytes stay in the blob store), checklist items (one row per item),
and the dictionaries, queues and users staged with them.

People are referred to by id in the tracker's replies; their logins come from the staged
users (`staged_logins`). Durations are ISO-8601 strings on the wire (`PT5H15M`, the tracker's `P1H`):
they are exported in seconds beside the original text.
"""

from __future__ import annotations

from typing import Any

from haul.pipelines.config import Config
from haul.pipelines.export.columns import (
    as_json,
    blob_sha256,
    day,
    dictionary,
    display_text,
    identifier,
    parent,
    seconds,
    timestamp,
    value,
)
from haul.pipelines.export.id_map import Identity, Lookups, register_identity
from haul.pipelines.export.tables import Column, Item, Table
from haul.pipelines.tracker.export_columns import (
    checklist_items,
    of_issue,
    of_link,
    of_parent_issue,
    people,
    person,
)
from haul.state.store import StagedRecord, StagingStore

SERVICE = "tracker"
ISSUE_KEY = parent("issue_key", "the key of the issue it belongs to")


def _keys_of(item: Item, *path: str) -> list[Any] | None:
    refs = item.get(*path)
    if not isinstance(refs, list):
        return None
    return [
        ref.get("key") or display_text(ref.get("display")) if isinstance(ref, dict) else ref
        for ref in refs
    ]


def names(name: str, doc: str, *path: str) -> Column:
    """A list of references at `path` (components, versions), as a JSON list of keys or names."""
    return Column(name, "json", doc, lambda item: _keys_of(item, *path))


def _attachment_count(item: Item) -> int:
    return len(item.get("attachments") or [])


def _name(item: Item) -> str | None:
    return display_text(item.get("name"))


def _created_and_updated(what: str) -> tuple[Column, ...]:
    return (
        timestamp("created_at", f"when the {what} was created", "createdAt"),
        *person("created_by", f"who created the {what}", "createdBy"),
        timestamp("updated_at", f"when the {what} was last changed", "updatedAt"),
        *person("updated_by", f"who changed the {what} last", "updatedBy"),
    )


# Issue fields read into columns of their own; anything else lands in `other_fields`.
_ISSUE_FIELDS = frozenset({
    "id", "key", "self", "queue", "summary", "description", "type", "status", "statusType",
    "previousStatus", "priority", "resolution", "createdAt", "createdBy", "updatedAt",
    "updatedBy", "resolvedAt", "resolvedBy", "assignee", "statusStartTime",
    "lastCommentUpdatedAt", "deadline", "start", "end", "spent", "estimation",
    "originalEstimation", "storyPoints", "tags", "followers", "components", "fixVersions",
    "affectedVersions", "parent", "epic", "sprint", "votes", "commentWithoutExternalMessageCount",
    "commentWithExternalMessageCount", "checklistDone", "checklistTotal", "checklistItems",
    "attachments", "version", "favorite",
})  # fmt: skip


def _other_fields(item: Item) -> dict[str, Any] | None:
    other = {name: data for name, data in item.raw.items() if name not in _ISSUE_FIELDS}
    return other or None


def _comment_count(item: Item) -> int | None:
    counters = [
        item.get(name)
        for name in ("commentWithoutExternalMessageCount", "commentWithExternalMessageCount")
    ]
    numbers = [count for count in counters if isinstance(count, int)]
    return sum(numbers) if numbers else None


ISSUES = Table("issues", "issue", (
    identifier("id", "the issue's id", "id"),
    value("key", "string", "the issue's key (QUEUE-123)", "key"),
    value("queue_key", "string", "the queue's key", "queue", "key"),
    value("queue_name", "string", "the queue's name", "queue", "display"),
    value("summary", "string", "the title", "summary"),
    value("description", "string", "the description (the tracker's markup)", "description"),
    *dictionary("type", "the issue type", "type"),
    *dictionary("status", "the status", "status"),
    value("status_type", "string", "the status's kind (new, done, ...)", "statusType", "key"),
    *dictionary("previous_status", "the status before this one", "previousStatus"),
    *dictionary("priority", "the priority", "priority"),
    *dictionary("resolution", "the resolution (empty while unresolved)", "resolution"),
    *_created_and_updated("issue"),
    timestamp("resolved_at", "when it was resolved", "resolvedAt"),
    *person("resolved_by", "who resolved it", "resolvedBy"),
    *person("assignee", "the assignee", "assignee"),
    timestamp("status_start_time", "when it entered its status", "statusStartTime"),
    timestamp("last_comment_updated_at", "when a comment last changed", "lastCommentUpdatedAt"),
    day("deadline", "the deadline", "deadline"),
    day("start", "the planned start", "start"),
    day("end", "the planned end", "end"),
    seconds("spent_s", "time spent (seconds; the sum of its worklogs)", "spent"),
    seconds("estimation_s", "time still estimated (seconds)", "estimation"),
    seconds("original_estimation_s", "the first estimate (seconds)", "originalEstimation"),
    value("story_points", "float", "story points", "storyPoints"),
    as_json("tags", "its tags, a JSON list of strings", "tags"),
    people("followers", "followers' logins, a JSON list", "followers"),
    names("components", "component names, a JSON list", "components"),
    names("fix_versions", "fix versions, a JSON list", "fixVersions"),
    names("affected_versions", "affected versions, a JSON list", "affectedVersions"),
    value("parent_key", "string", "the parent issue's key", "parent", "key"),
    value("epic_key", "string", "the epic's key", "epic", "key"),
    names("sprints", "sprint names, a JSON list", "sprint"),
    value("votes", "int", "votes", "votes"),
    Column("comment_count", "int", "comments (internal and external)", _comment_count),
    Column("attachment_count", "int", "attachments on the issue", _attachment_count),
    value("checklist_done", "int", "checklist items done", "checklistDone"),
    value("checklist_total", "int", "checklist items", "checklistTotal"),
    value("version", "int", "the issue's version (edits so far)", "version"),
    Column("other_fields", "json", "every other field (local ones too), a JSON object", _other_fields),
), doc="one row per issue", service=SERVICE, partition_by="created_at",
   access=of_issue)  # fmt: skip


def _attachment_ids(item: Item) -> list[str] | None:
    files = item.get("attachments")
    if not isinstance(files, list):
        return None
    return [str(ref.get("id")) if isinstance(ref, dict) else str(ref) for ref in files]


COMMENTS = Table("comments", "comment", (
    identifier("id", "the comment's id", "id"),
    identifier("long_id", "the comment's long id", "longId"),
    ISSUE_KEY,
    value("text", "string", "the text (the tracker's markup)", "text"),
    value("type", "string", "standard, incoming or outcoming (mail)", "type"),
    value("transport", "string", "internal or email", "transport"),
    *_created_and_updated("comment"),
    Column("attachment_ids", "json", "its attachments' ids (attachments.comment_id)", _attachment_ids),
    value("version", "int", "the comment's version (edits so far)", "version"),
), doc="one row per comment", service=SERVICE, partition_by="created_at",
   access=of_parent_issue)  # fmt: skip

WORKLOGS = Table("worklogs", "worklog", (
    identifier("id", "the worklog's id", "id"),
    ISSUE_KEY,
    timestamp("start", "when the work started", "start"),
    seconds("duration_s", "time logged (seconds)", "duration"),
    value("duration", "string", "time logged as the tracker wrote it (ISO-8601)", "duration"),
    value("comment", "string", "the note", "comment"),
    *_created_and_updated("worklog"),
), doc="one row per worklog record", service=SERVICE, access=of_parent_issue)  # fmt: skip


def _changes(item: Item) -> list[dict[str, Any]] | None:
    fields = item.get("fields")
    if not isinstance(fields, list):
        return None
    return [
        {
            "field": (change.get("field") or {}).get("id"),
            "from": _plain(change.get("from")),
            "to": _plain(change.get("to")),
        }
        for change in fields
        if isinstance(change, dict)
    ]


def _plain(data: Any) -> Any:
    """A changed value without its links: a reference becomes its key (or id, or name)."""
    if isinstance(data, list):
        return [_plain(element) for element in data]
    if isinstance(data, dict):
        return data.get("key") or data.get("id") or display_text(data.get("display"))
    return data


def _changed_fields(item: Item) -> str | None:
    changes = _changes(item)
    return None if changes is None else ",".join(str(change["field"]) for change in changes)


CHANGELOG = Table("changelog", "changelog", (
    identifier("id", "the entry's id", "id"),
    ISSUE_KEY,
    value("type", "string", "what happened (IssueCreated, IssueUpdated, IssueWorkflow, ...)", "type"),
    value("transport", "string", "where it came from (front, api, email, ...)", "transport"),
    timestamp("updated_at", "when it happened", "updatedAt"),
    *person("updated_by", "who did it", "updatedBy"),
    Column("fields_changed", "string", "the fields it changed, comma-separated ids", _changed_fields),
    Column("changes", "json", 'a JSON list of {"field", "from", "to"}, values by key', _changes),
), doc="one row per changelog entry", service=SERVICE, partition_by="updated_at",
   access=of_parent_issue)  # fmt: skip


def _relationship(item: Item) -> Any:
    direction = item.get("direction")
    return item.get("type", direction) if direction in ("inward", "outward") else None


LINKS = Table("links", "link", (
    identifier("id", "the link's id", "id"),
    ISSUE_KEY,
    value("direction", "string", "outward or inward, as seen from issue_key", "direction"),
    identifier("link_type", "the link type's id (relates, depends, subtask, ...)", "type", "id"),
    Column("relationship", "string", "how issue_key relates to the other issue", _relationship),
    value("other_issue_key", "string", "the other issue's key", "object", "key"),
    value("other_issue_summary", "string", "the other issue's title", "object", "display"),
    *dictionary("other_issue_status", "the other issue's status", "status"),
    *_created_and_updated("link"),
), doc=(
    "one row per link as each issue shows it (a link between two staged issues is in twice)"
), service=SERVICE, access=of_link)  # fmt: skip


def comment_owners(issue: str) -> Any:
    """The store lookup: attachment id -> comment id, for one issue's comments."""

    def build(store: StagingStore) -> dict[str, str]:
        return {
            str(ref.get("id") if isinstance(ref, dict) else ref): str(comment.raw.get("id"))
            for comment in store.iter_records("comment", parent=issue)
            for ref in comment.raw.get("attachments") or []
        }

    return build


def _comment_id(item: Item) -> str | None:
    issue = item.record.parent or ""
    owners: dict[str, str] = item.context.memo(
        ("tracker.comment_owners", issue), comment_owners(issue)
    )
    return owners.get(str(item.get("id")))


ATTACHMENTS = Table("attachments", "attachment", (
    identifier("id", "the attachment's id", "id"),
    ISSUE_KEY,
    Column("comment_id", "string", "its comment (empty: the issue's own)", _comment_id),
    value("name", "string", "the file name", "name"),
    value("mimetype", "string", "the media type", "mimetype"),
    value("size_bytes", "int", "its size in bytes", "size"),
    blob_sha256(),
    timestamp("created_at", "when it was attached", "createdAt"),
    *person("created_by", "who attached it", "createdBy"),
), doc="one row per attachment (metadata only)", service=SERVICE,
   access=of_parent_issue)  # fmt: skip


CHECKLIST_ITEMS = Table("checklist_items", "checklist", (
    ISSUE_KEY,
    Column("position", "int", "the item's place in the checklist, from 0", lambda item: item.position),
    identifier("id", "the item's id", "id"),
    value("text", "string", "the item's text", "text"),
    value("checked", "bool", "whether it is done", "checked"),
    value("item_type", "string", "standard, or a kind of its own", "checklistItemType"),
    *person("assignee", "the item's assignee", "assignee"),
    timestamp("deadline", "the item's deadline", "deadline", "date"),
    value("deadline_type", "string", "date or dateTime", "deadline", "deadlineType"),
), doc="one row per checklist item, in checklist order", service=SERVICE,
   items=checklist_items, access=of_parent_issue)  # fmt: skip


def _dictionary_table(name: str, entity: str, what: str, *extra: Column) -> Table:
    return Table(name, entity, (
        identifier("id", f"the {what}'s id", "id"),
        value("key", "string", f"the {what}'s key", "key"),
        Column("name", "string", f"the {what}'s name (English when localised)", _name),
        *extra,
        value("description", "string", "its description", "description"),
    ), doc=f"the source org's {what} dictionary", service=SERVICE)  # fmt: skip


STATUSES = _dictionary_table(
    "statuses", "status", "status", value("type", "string", "new, inProgress, done, ...", "type"),
    value("order", "int", "its place in lists", "order"),
)  # fmt: skip
ISSUE_TYPES = _dictionary_table("issue_types", "issuetype", "issue type")
PRIORITIES = _dictionary_table(
    "priorities", "priority", "priority", value("order", "int", "its place in lists", "order")
)
RESOLUTIONS = _dictionary_table(
    "resolutions", "resolution", "resolution", value("order", "int", "its place in lists", "order")
)
LINK_TYPES = Table("link_types", "linktype", (
    identifier("id", "the link type's id", "id"),
    value("outward", "string", "its name seen from the source issue", "outward"),
    value("inward", "string", "its name seen from the other issue", "inward"),
), doc="the source org's link types", service=SERVICE)  # fmt: skip
QUEUES = Table("queues", "queue", (
    identifier("id", "the queue's id", "id"),
    value("key", "string", "the queue's key", "key"),
    value("name", "string", "the queue's name", "name"),
    value("description", "string", "its description", "description"),
    *person("lead", "the queue's lead", "lead"),
    *dictionary("default_type", "the default issue type", "defaultType"),
    *dictionary("default_priority", "the default priority", "defaultPriority"),
), doc="the source org's queues", service=SERVICE)  # fmt: skip
USERS = Table("users", "user", (
    identifier("uid", "the user's id (what other tables' people refer to)", "uid"),
    value("login", "string", "the login", "login"),
    value("name", "string", "the display name", "display"),
    value("first_name", "string", "the first name", "firstName"),
    value("last_name", "string", "the last name", "lastName"),
    value("email", "string", "the e-mail address", "email"),
    value("dismissed", "bool", "whether the user has left the org", "dismissed"),
    value("external", "bool", "whether the user is outside the org", "external"),
    value("has_license", "bool", "whether the user has a licence", "hasLicense"),
    timestamp("first_login_at", "the first login", "firstLoginDate"),
    timestamp("last_login_at", "the last login", "lastLoginDate"),
), doc="the source org's users", service=SERVICE)  # fmt: skip

TABLES = (
    ISSUES, COMMENTS, WORKLOGS, CHANGELOG, LINKS, ATTACHMENTS, CHECKLIST_ITEMS,
    STATUSES, ISSUE_TYPES, PRIORITIES, RESOLUTIONS, LINK_TYPES, QUEUES, USERS,
)  # fmt: skip


def _issue_key(record: StagedRecord, config: Config | None) -> Any:
    return record.raw.get("key") or record.source_id


def _target_issue_key(target_id: str, record: StagedRecord, lookups: Lookups) -> str:
    """The ledger holds an issue's target key as its target id (followed when it moves)."""
    return target_id


def _file_path(record: StagedRecord, config: Config | None) -> str | None:
    """A file by the path the tracker's links give it: `<issue key>/attachments/<id>` (its
    staged id is `<issue key>/<id>`: the file's own id is the part after the issue's)."""
    if not record.parent:
        return None
    return f"{record.parent}/attachments/{record.source_id.rpartition('/')[2]}"


def _target_file_path(target_id: str, record: StagedRecord, lookups: Lookups) -> str | None:
    issue = lookups.target_of("issue", record.parent or "")
    return f"{issue}/attachments/{target_id}" if issue else None


# the key map (`id_map`): issues by key, their files by the path links give them
register_identity(Identity("issue", _issue_key, _target_issue_key, of_issue, SERVICE))
register_identity(Identity("attachment", _file_path, _target_file_path, of_parent_issue, SERVICE))
