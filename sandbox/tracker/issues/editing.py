"""Ordinary (non-import) writes: edit an issue, comment on it, add checklist items.

Unlike imports these happen *now*: each bumps the issue's updatedAt (and an edit its version),
which is what incremental extraction has to notice.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import replace
from typing import Any

from haul.sandbox.timefmt import parse_instant
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.errors import ApiError, invalid
from haul.sandbox.tracker.issues.changes import touch
from haul.sandbox.tracker.issues.import_fields import STRUCTURE_FIELDS, issue_refs
from haul.sandbox.tracker.issues.importing import echoed, runtime_hex_id
from haul.sandbox.tracker.model import (
    ChangelogEntry,
    ChecklistItem,
    Comment,
    Dictionary,
    FieldChange,
    Issue,
    Org,
    Pairs,
)

_TEXT_FIELDS = ("summary", "description")
# what an edit changes besides custom fields (any other key is ignored, as the service does)
EDITED_FIELDS = frozenset(
    (*_TEXT_FIELDS, "tags", "assignee", "followers", "type", "priority", *STRUCTURE_FIELDS)
)


def edit_issue(org: Org, issue: Issue, body: dict, editor: int, now: int) -> Issue:
    """PATCH: any subset of summary, description, tags, assignee, followers, type, priority,
    the structure fields (components, versions, sprint, dates, estimates, story points, user
    lists) and custom fields; other keys are ignored."""
    if "status" in body:
        raise invalid({"status": "Status cannot be changed by update; execute a transition"})
    checks = Checks(org, body)
    changes: dict[str, Any] = {}  # checked values of Issue fields
    history: list[FieldChange] = []
    for name in _TEXT_FIELDS:
        if name in body:
            value = checks.text(
                name, required=name == "summary", limit=255 if name == "summary" else 512_000
            )
            changes[name] = value or None if name == "description" else value
            history.append(FieldChange(name, "text", getattr(issue, name), changes[name]))
    if "tags" in body:
        changes["tags"] = _tags(checks, issue.tags, body["tags"])
        history.append(FieldChange("tags", "value", issue.tags, changes["tags"]))
    if "assignee" in body:
        user = checks.user("assignee") if body["assignee"] is not None else None
        changes["assignee"] = user.uid if user else None
        history.append(FieldChange("assignee", "users", issue.assignee, changes["assignee"]))
    if "followers" in body:
        changes["followers"] = checks.users("followers")
        history.append(FieldChange("followers", "value", issue.followers, changes["followers"]))
    for name, dictionary in (("type", org.issue_types), ("priority", org.priorities)):
        if name in body:
            changes[name] = _dictionary_key(checks, name, dictionary, body[name])
            history.append(FieldChange(name, dictionary.path, getattr(issue, name), changes[name]))
    values = _structure_values(org, issue, checks)
    checks.done()
    org.records(issue)  # generate sub-records from the original header before it changes
    if values is not None:
        history += _value_changes(org.values(issue), values)
        org.set_values(issue, *values)
    updated = replace(
        issue,
        **changes,
        updated_at=max(now, issue.updated_at),
        updated_by=editor,
        version=issue.version + 1,
    )
    org.put_issue(updated)
    entry = ChangelogEntry(
        runtime_hex_id(org, "changelog"), "IssueUpdated", editor, updated.updated_at
    )
    # every field the edit changed, with its value before and after: the issue's per-field
    # history (a test reads which side changed what, and when)
    entry.fields.extend(history)
    org.records(updated).changelog.append(entry)
    return updated


def _structure_values(org: Org, issue: Issue, checks: Checks) -> tuple[Pairs, Pairs] | None:
    """The issue's (extra, refs) with the structure fields and custom fields the body sends
    replaced (null clears one); None when it sends none.  Checked as an import checks them."""
    names: dict[str, str] = {}  # body key -> the key its value is kept under
    for name in checks.body:
        field = org.structure.custom_field(issue.queue, name)
        if name in STRUCTURE_FIELDS or field is not None:
            names[name] = field.id if field is not None else name
    if not names:
        return None
    given = Checks(org, {name: checks.body[name] for name in names})
    given.errors = checks.errors  # one 422 for the whole edit
    new_extra, new_refs = echoed(given), issue_refs(given, org.queues.get(issue.queue))
    extra, refs = org.values(issue)
    sent = set(names.values())
    return (
        tuple((k, v) for k, v in extra if k not in sent) + new_extra,
        tuple((k, v) for k, v in refs if k not in sent) + new_refs,
    )


def _value_changes(before: tuple[Pairs, Pairs], after: tuple[Pairs, Pairs]) -> list[FieldChange]:
    """One change per structure or custom field whose value an edit changed (by field id)."""
    old, new = dict(before[0] + before[1]), dict(after[0] + after[1])
    return [
        FieldChange(name, "value", old.get(name), new.get(name))
        for name in sorted({*old, *new})
        if old.get(name) != new.get(name)
    ]


def _tags(checks: Checks, current: tuple[str, ...], value: object) -> tuple[str, ...]:
    """A list replaces the tags; ``{"add": [...], "remove": [...]}`` edits them."""
    if isinstance(value, dict):
        add = [tag for tag in value.get("add", []) if isinstance(tag, str)]
        remove = set(value.get("remove", []))
        return tuple(tag for tag in dict.fromkeys([*current, *add]) if tag not in remove)
    if isinstance(value, list) and all(isinstance(tag, str) for tag in value):
        return tuple(value)
    checks.fail("tags", "Must be a list of strings or {add, remove}")
    return current


def _dictionary_key(checks: Checks, name: str, dictionary: Dictionary, value: object) -> str:
    """``"bug"``, ``{"key": "bug"}`` or a numeric id."""
    key = value.get("key") if isinstance(value, dict) else value
    entry = dictionary.by_key.get(key) if isinstance(key, str) else None
    entry = entry or dictionary.lookup_id(value if not isinstance(value, dict) else value.get("id"))
    if entry is None:
        checks.fail(name, f"Unknown {name} {value!r}")
        return ""
    return entry.key


def add_comment(org: Org, issue: Issue, body: dict, author: int, now: int) -> Comment:
    """A new comment at ``now``; the issue's updatedAt moves to it, with an entry in its
    changelog."""
    checks = Checks(org, body)
    text = checks.text("text", required=True)
    checks.done()
    records = org.records(issue)
    comment_id = org.counters.take("comment")
    comment = Comment(
        id=comment_id,
        long_id=hashlib.sha256(f"comment:{issue.id}:{comment_id}".encode()).hexdigest()[:24],
        text=text or "",
        created_by=author,
        created_at=max(now, issue.updated_at),
        updated_by=author,
        updated_at=max(now, issue.updated_at),
    )
    records.comments.append(comment)
    # in the issue's history as IssueCommentAdded, like an edit or a removal of a comment
    touch(
        org, issue, author, comment.created_at, "IssueCommentAdded",
        FieldChange("comment", "text", None, comment.text),
        comment_count=issue.comment_count + 1, last_comment_at=comment.created_at,
    )  # fmt: skip
    return comment


def add_checklist_items(org: Org, issue: Issue, body: object, editor: int, now: int) -> Issue:
    """One item object or an array of them; bumps updatedAt like any other edit."""
    items = body if isinstance(body, list) else [body]
    if not items or not all(isinstance(item, dict) for item in items):
        raise ApiError(400, "Send a checklist item object or an array of them")
    created = [_checklist_item(org, item) for item in items if isinstance(item, dict)]
    records = org.records(issue)
    records.checklist.extend(created)
    updated = replace(issue, updated_at=max(now, issue.updated_at), updated_by=editor)
    org.put_issue(updated)
    return updated


def edit_checklist_item(
    org: Org, issue: Issue, item_id: str, body: object, editor: int, now: int
) -> Issue:
    """PATCH one item: the keys sent (text, checked, assignee, deadline) change; bumps
    updatedAt like any other edit."""
    if not isinstance(body, dict):
        raise ApiError(400, "Send a checklist item object")
    item = _checklist_item_of(org, issue, item_id)
    edited = _checklist_item(org, {"text": item.text, **body})
    item.text = edited.text
    if "checked" in body:
        item.checked = edited.checked
    if "assignee" in body:
        item.assignee = edited.assignee
    if "deadline" in body:
        item.deadline = edited.deadline
    return _checklist_edited(org, issue, editor, now)


def delete_checklist_items(
    org: Org, issue: Issue, item_id: str | None, editor: int, now: int
) -> Issue:
    """DELETE one item, or (no item id) clear the whole checklist; bumps updatedAt."""
    records = org.records(issue)
    if item_id is None:
        records.checklist.clear()
    else:
        records.checklist.remove(_checklist_item_of(org, issue, item_id))
    return _checklist_edited(org, issue, editor, now)


def _checklist_item_of(org: Org, issue: Issue, item_id: str) -> ChecklistItem:
    found = next((i for i in org.records(issue).checklist if i.id == item_id), None)
    if found is None:
        raise ApiError(404, "Checklist item does not exist.", errors={"id": item_id})
    return found


def _checklist_edited(org: Org, issue: Issue, editor: int, now: int) -> Issue:
    updated = replace(issue, updated_at=max(now, issue.updated_at), updated_by=editor)
    org.put_issue(updated)
    return updated


def _checklist_item(org: Org, body: dict) -> ChecklistItem:
    checks = Checks(org, body)
    text = checks.text("text", required=True, limit=10_000)
    checked = body.get("checked", False)
    if not isinstance(checked, bool):
        checks.fail("checked", "Must be a boolean")
    assignee = checks.user("assignee")
    deadline = body.get("deadline")
    if isinstance(deadline, dict):
        deadline = deadline.get("date")
    moment = parse_instant(deadline) if deadline is not None else None
    if deadline is not None and moment is None:
        checks.fail("deadline", "Must be a timestamp or {date, deadlineType}")
    checks.done()
    return ChecklistItem(
        id=secrets.token_hex(12),
        text=text or "",
        checked=bool(checked),
        assignee=assignee.uid if assignee else None,
        deadline=moment,
    )
