"""Transform: turn staged source records into the bodies the target's `_import` endpoints take.

Pure functions and small maps, no I/O: queue remapping (keys follow, and key references in
text are rewritten), users by login through an optional CSV with a default, and dictionary
values (status, type, priority, resolution) mapped by key to the target's numeric ids.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from haul.connectors.errors import HaulError
from haul.pipelines.export.values import parse_duration_seconds
from haul.pipelines.specs import RecordFailure
from haul.pipelines.sync.markup import sub_outside_code
from haul.pipelines.sync.references import References
from haul.pipelines.tracker.issue_access import IssueAccess
from haul.pipelines.tracker.issue_access import wanted as wanted_access
from haul.pipelines.tracker.timefmt import format_time

KEY_PATTERN = re.compile(r"\b([A-Z][A-Z0-9_]*)-(\d+)\b")

# (link type id, direction as seen from the importing issue) -> relationship for links/_import
RELATIONSHIPS: dict[tuple[str, str], str] = {
    ("relates", "outward"): "relates",
    ("relates", "inward"): "relates",
    ("depends", "outward"): "depends on",
    ("depends", "inward"): "is dependent by",
    ("subtask", "outward"): "is parent task for",
    ("subtask", "inward"): "is subtask for",
    ("duplicates", "outward"): "is duplicated by",
    ("duplicates", "inward"): "duplicates",
    ("epic", "outward"): "has epic",
    ("epic", "inward"): "is epic of",
    ("clone", "outward"): "clone",
    ("clone", "inward"): "original",
}

DICTIONARY_FIELDS = {
    "status": "status",
    "type": "issuetype",
    "priority": "priority",
    "resolution": "resolution",
}


class TransformError(RecordFailure):
    """This record cannot be turned into a target body; the message says why."""


class MissingDictionaryValues(HaulError):
    """Keys used by staged issues that the target org lacks: fix the target, then load."""

    def __init__(self, missing: dict[str, list[str]]) -> None:
        parts = [f"{kind}: {', '.join(keys)}" for kind, keys in sorted(missing.items())]
        super().__init__(
            "cannot load: the target org lacks these dictionary keys: "
            + "; ".join(parts)
            + " (create them in the target, then run the same command)"
        )
        self.missing = missing


@dataclass(frozen=True)
class QueueMap:
    """Source queue -> target queue; keys keep their number (TEST-12 -> NEW-12)."""

    mapping: dict[str, str] = field(default_factory=dict)

    def queue(self, queue: str) -> str:
        return self.mapping.get(queue, queue)

    def key(self, key: str) -> str:
        queue, _, number = key.rpartition("-")
        return f"{self.queue(queue)}-{number}"

    def rewrite(self, text: str | None) -> str | None:
        """Rewrite references to keys of remapped queues inside free text (not in code:
        `pipelines.sync.markup`)."""
        if not text or not self.mapping:
            return text
        return sub_outside_code(
            KEY_PATTERN,
            lambda m: (
                f"{self.queue(m.group(1))}-{m.group(2)}"
                if m.group(1) in self.mapping
                else m.group(0)
            ),
            text,
        )


@dataclass
class UserMap:
    """Source user references -> target logins.

    Order: the CSV mapping, then the same login if the target has it, then the default user.
    Each source user that fell to the default is remembered for the run report.
    """

    source_logins: dict[str, str]
    target_logins: set[str]
    explicit: dict[str, str] = field(default_factory=dict)
    default: str | None = None
    unmapped: set[str] = field(default_factory=set)

    def source_login(self, ref: dict[str, Any] | str) -> str:
        """A source user reference's login (its uid when the source listed no such user)."""
        uid = str(ref.get("id")) if isinstance(ref, dict) else str(ref)
        return self.source_logins.get(uid, uid)

    def holder(self, ref: dict[str, Any] | str) -> str | None:
        """A source user's target login where the login grants access: by the users file or
        the same login, and only a login the target has; never the default user (None)."""
        login = self.source_login(ref)
        mapped = self.explicit.get(login, login)
        return mapped if mapped in self.target_logins else None

    def login(self, ref: dict[str, Any] | str | None) -> str | None:
        if ref is None:
            return None
        login = self.source_login(ref)
        mapped = self.explicit.get(login)
        if mapped is not None:
            return mapped
        if login in self.target_logins:
            return login
        if self.default is None:
            raise TransformError(
                f"user {login!r} has no target user and no mapping.default_user is set"
            )
        label = ref.get("display", login) if isinstance(ref, dict) else login
        self.unmapped.add(f"{login} ({label})" if label != login else login)
        return self.default


@dataclass(frozen=True)
class DictionaryMap:
    """Organisation dictionaries mapped by key: source id or key -> target numeric id."""

    source_keys: dict[str, dict[str, str]]  # kind -> source id -> key
    target_ids: dict[str, dict[str, Any]]  # kind -> key -> target id
    # (kind, source id) -> the target id of a value the load made (the ledger's), else None
    made: Callable[[str, str], str | None] = lambda kind, source_id: None

    def key_of(self, kind: str, ref: dict[str, Any]) -> str:
        key = ref.get("key") or self.source_keys.get(kind, {}).get(str(ref.get("id")))
        if not key:
            raise TransformError(f"{kind} {ref!r} has no key")
        return str(key)

    def target_id(self, kind: str, ref: dict[str, Any]) -> Any:
        key = self.key_of(kind, ref)
        if key in self.target_ids.get(kind, {}):
            return self.target_ids[kind][key]
        made = self.made(kind, str(ref.get("id")))
        if made is None:
            raise TransformError(f"the target org has no {kind} with key {key!r}")
        return made

    def missing(self, issues: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
        """Keys the staged issues use that the target lacks, by dictionary kind."""
        missing: dict[str, set[str]] = {}
        for issue in issues:
            for field_name, kind in DICTIONARY_FIELDS.items():
                ref = issue.get(field_name)
                if isinstance(ref, dict):
                    key = self.key_of(kind, ref)
                    if key not in self.target_ids.get(kind, {}):
                        missing.setdefault(kind, set()).add(key)
        return {kind: sorted(keys) for kind, keys in missing.items()}


STRUCTURE_REFS = {  # issue field -> the organisation object its ids name
    "components": "component",
    "fixVersions": "version",
    "affectedVersions": "version",
    "sprint": "sprint",
}
PLAIN_FIELDS = ("deadline", "start", "end", "storyPoints")
ESTIMATES = ("originalEstimation", "estimation", "spent")  # ISO-8601 read, milliseconds sent
USER_LISTS = ("votedBy", "favoritedBy")  # `access` maps strictly: see `Transform.access`


@dataclass
class StructureMap:
    """What an issue points to in the organisation's structure, mapped to the target.

    `target_id(entity, source id)` is the target id of a loaded organisation object (the
    ledger's), None when it did not load; `custom_fields` the source's global custom field
    keys, `local_fields` each queue's local field keys, `renamed` the user's own
    `[mapping] fields`, `clashes` the global fields whose target key names a target field of
    another type (source key -> that type). A value that cannot be carried is left out of
    the body and counted in `dropped` by (field, reason): the issue still loads.
    """

    target_id: Callable[[str, str], str | None]
    custom_fields: set[str] = field(default_factory=set)
    local_fields: dict[str, set[str]] = field(default_factory=dict)
    renamed: Mapping[str, str] = field(default_factory=dict)
    clashes: Mapping[str, str] = field(default_factory=dict)
    dropped: Counter[tuple[str, str]] = field(default_factory=Counter)

    @contextmanager
    def counting_nothing(self) -> Iterator[None]:
        """Bodies built inside count nothing as dropped: a second look at a record whose
        send counts what it leaves out (the base a sync keeps of it)."""
        kept = Counter(self.dropped)
        try:
            yield
        finally:
            self.dropped = kept

    def ids(self, name: str, refs: list[Any]) -> list[str]:
        """The target ids of an issue's `name` references (components, versions, sprints)."""
        entity = STRUCTURE_REFS[name]
        found = []
        for ref in refs:
            source = str(ref.get("id")) if isinstance(ref, dict) else str(ref)
            target = self.target_id(entity, source)
            if target is None:
                self.dropped[name, f"{entity} not in the target"] += 1
            else:
                found.append(target)
        return found

    def custom_key(self, queue: str, key: str, *, loaded: bool = False) -> str | None:
        """The target key of a custom field an issue carries under `key`, else None; with
        `loaded`, only of a field the target has (else the value is counted as dropped)."""
        if key in self.custom_fields:
            entity, source = "field", key
        elif (bare := key.rpartition("--")[2]) in self.local_fields.get(queue, set()):
            entity, source = "local_field", f"{queue}/{bare}"
        else:
            return None
        bare = source.rpartition("/")[2]
        target_key = self.renamed.get(bare, bare)
        if loaded and self.target_id(entity, source) is None:
            self.dropped[f"field:{bare}", f"{entity} not in the target"] += 1
            return None
        if loaded and entity == "field" and bare in self.clashes:
            kind = self.clashes[bare].rpartition(".")[2]
            self.dropped[f"field:{bare}", f"the target's field of that key is a {kind}"] += 1
            return None
        return target_key


def import_time(value: Any) -> Any:
    """A time as the import takes it: the tracker may send epoch milliseconds (a number, or
    digits) where it usually sends ISO-8601; those become ISO-8601 UTC, the rest is kept."""
    if isinstance(value, str) and value.isdigit() and len(value) >= 10:
        value = int(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_time(datetime.fromtimestamp(value / 1000, tz=UTC))
    return value


def milliseconds(value: Any) -> int | None:
    """An estimate as the import takes it: an ISO-8601 duration (or a number of ms) in ms."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    seconds = parse_duration_seconds(value)
    return None if seconds is None else seconds * 1000


@dataclass
class Transform:
    """Everything needed to build target bodies from source records."""

    queues: QueueMap
    users: UserMap
    dictionaries: DictionaryMap
    unique_prefix: str
    structure: StructureMap | None = None
    # files, users and web hosts of the source named in text (`pipelines.sync.references`)
    references: References = field(default_factory=References)

    def text(self, value: str | None) -> str | None:
        """A text as the target holds it: its references to the source rewritten (a file
        not in the target yet is left for `pipelines.tracker.children.texts` to patch), and the
        keys of remapped queues."""
        return self.queues.rewrite(self.references.rewrite(value))

    def settled_text(self, value: str | None, where: str) -> str | None:
        """`text` for a text nothing writes again (an entity's): a file it shows that is not
        in the target is counted among what the run did not carry, naming `where`."""
        return self.queues.rewrite(self.references.settled(value, where))

    def issue_body(self, issue: dict[str, Any]) -> dict[str, Any]:
        key = issue["key"]
        body: dict[str, Any] = {
            "queue": self.queues.queue(_queue_key(issue)),
            "key": self.queues.key(key),
            "summary": issue["summary"],
            "createdAt": import_time(issue["createdAt"]),
            "createdBy": self.users.login(issue.get("createdBy")),
            "unique": f"{self.unique_prefix}:{key}",
        }
        if issue.get("updatedAt"):
            body["updatedAt"] = import_time(issue["updatedAt"])
            body["updatedBy"] = self.users.login(issue.get("updatedBy") or issue.get("createdBy"))
        for field_name, kind in DICTIONARY_FIELDS.items():
            ref = issue.get(field_name)
            if isinstance(ref, dict) and field_name != "resolution":
                body[field_name] = self.dictionaries.target_id(kind, ref)
        if isinstance(issue.get("resolution"), dict):
            body["resolution"] = self.dictionaries.target_id("resolution", issue["resolution"])
            body["resolvedAt"] = import_time(issue.get("resolvedAt") or issue["updatedAt"])
            body["resolvedBy"] = self.users.login(issue.get("resolvedBy") or issue.get("updatedBy"))
        if issue.get("description") is not None:
            body["description"] = self.text(issue["description"])
        if issue.get("tags"):
            body["tags"] = list(issue["tags"])
        if issue.get("assignee"):
            body["assignee"] = self.users.login(issue["assignee"])
        if issue.get("followers"):
            body["followers"] = [self.users.login(ref) for ref in issue["followers"]]
        if self.structure is not None:
            body.update(self._carried(issue, body["queue"]))
        return body

    def _carried(self, issue: dict[str, Any], queue: str) -> dict[str, Any]:
        """The fields beyond the core ones: structure ids, planning dates, estimates, story
        points, people lists, mail lists and custom field values."""
        structure = self.structure
        assert structure is not None
        carried: dict[str, Any] = {}
        for name in STRUCTURE_REFS:
            if issue.get(name):
                ids = structure.ids(name, list(issue[name]))
                if ids:
                    carried[name] = ids
        for name in PLAIN_FIELDS:
            if issue.get(name) is not None:
                carried[name] = issue[name]
        for name in ESTIMATES:
            if issue.get(name) is not None:
                ms = milliseconds(issue[name])
                if ms is None:
                    structure.dropped[name, "not a duration"] += 1
                else:
                    carried[name] = ms
        for name in USER_LISTS:
            if issue.get(name):
                carried[name] = [self.users.login(ref) for ref in issue[name]]
        if access := self.access(issue).logins:
            carried["access"] = list(access)
        if issue.get("followingMaillists"):
            carried["followingMaillists"] = [
                mail_address(item) for item in issue["followingMaillists"]
            ]
        source_queue = _queue_key(issue)
        for key, value in issue.items():
            if value is None:
                continue
            target_key = structure.custom_key(source_queue, key, loaded=True)
            if target_key is not None:
                carried[target_key] = self.users.login(value) if _is_user(value) else value
        return carried

    def access(self, issue: dict[str, Any]) -> IssueAccess:
        """The issue's target access list, failing closed (see `pipelines.tracker.issue_access`)."""
        return wanted_access(issue, self.users.holder, self.users.source_login)

    def comment_text(self, comment: dict[str, Any]) -> str:
        """The text a comment is written with (what the target's length limit applies to)."""
        return self.text(comment.get("text") or "") or ""

    def comment_body(self, comment: dict[str, Any]) -> dict[str, Any]:
        body = {
            "text": self.comment_text(comment),
            "createdAt": import_time(comment["createdAt"]),
            "createdBy": self.users.login(comment.get("createdBy")),
        }
        if comment.get("updatedAt") and comment.get("updatedAt") != comment["createdAt"]:
            body["updatedAt"] = import_time(comment["updatedAt"])
            body["updatedBy"] = self.users.login(
                comment.get("updatedBy") or comment.get("createdBy")
            )
        return body

    def worklog_body(self, worklog: dict[str, Any]) -> dict[str, Any]:
        body = {
            "duration": worklog["duration"],
            "start": import_time(worklog["start"]),
            "createdAt": import_time(worklog["createdAt"]),
            "createdBy": self.users.login(worklog.get("createdBy")),
        }
        if worklog.get("comment"):
            body["comment"] = self.text(worklog["comment"])
        return body

    def link_body(self, link: dict[str, Any]) -> dict[str, Any]:
        kind = link["type"]["id"]
        relationship = RELATIONSHIPS.get((kind, link["direction"]))
        if relationship is None:
            raise TransformError(
                f"link type {kind!r} ({link['direction']}) has no import relationship"
            )
        return {
            "relationship": relationship,
            "issue": self.queues.key(link["object"]["key"]),
            "createdAt": import_time(link["createdAt"]),
            "createdBy": self.users.login(link.get("createdBy")),
        }

    def checklist_body(self, item: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "text": self.text(item["text"]),
            "checked": bool(item.get("checked")),
        }
        if item.get("assignee"):
            body["assignee"] = self.users.login(item["assignee"])
        if item.get("deadline"):
            body["deadline"] = item["deadline"]
        return body


def _is_user(value: Any) -> bool:
    return isinstance(value, dict) and "/users/" in str(value.get("self", ""))


def user_refs(value: Any) -> Iterator[dict[str, Any]]:
    """Every reference to a user anywhere in a record (its fields, lists, nested objects)."""
    if isinstance(value, list):
        for item in value:
            yield from user_refs(item)
    elif isinstance(value, dict):
        if _is_user(value):
            yield value
        for item in value.values():
            yield from user_refs(item)


def mail_address(item: Any) -> str:
    """A mail list as the import takes it: its address (a reference's email, id or name)."""
    if isinstance(item, dict):
        return str(item.get("email") or item.get("id") or item.get("display"))
    return str(item)


def _queue_key(issue: dict[str, Any]) -> str:
    queue = issue.get("queue")
    if isinstance(queue, dict) and queue.get("key"):
        return str(queue["key"])
    return str(issue["key"]).rpartition("-")[0]


def ref_id(value: Any) -> str | None:
    """The id of a reference (`{"id": ...}`), or the value itself."""
    if isinstance(value, dict):
        return str(value.get("id"))
    return None if value is None else str(value)


# The group of every person of an organisation, mapped by its id, never by its name.
#
# The tracker gives that group the id 1 in every organisation (the vendor's own importer names it
# `ALL_PARTICIPANTS_GROUP_ID = 1`) and a name in the organisation's language ("All employees",
# its Russian name in a Russian one): a source in one language and a target in another would map it to no one by
# name, and a queue or entity open to everyone would arrive open to no group. So a source group
# with that id maps to the target's group of every person, unless `[mapping] groups_file` maps it
# elsewhere (by its name or its id).
ALL_STAFF_ID = "1"


def is_all_staff(group_id: str, name: str, group_file: Mapping[str, str]) -> bool:
    """Whether a source group (its id and name) maps to the target's group of every person by
    its id: it is that group at the source, and the groups file maps it nowhere else."""
    return group_id == ALL_STAFF_ID and not (group_file.get(name) or group_file.get(group_id))
