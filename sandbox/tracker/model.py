"""In-memory state of the tracker sandbox: organisations, their dictionaries, issues, sub-records.

An issue header (:class:`Issue`) is immutable: every change replaces the header in
``Org.issues``.  A scroll therefore snapshots a search by keeping references to the headers
it matched; later edits create new headers and leave the snapshot untouched.

Sub-records (comments, worklogs, changelog, attachments, checklist) of a generated issue, and
its structure values (components, versions, sprints, custom fields, estimates), are produced on
first access (see :mod:`sandbox.tracker.seed.records`), so a 100 000-issue organisation
is cheap to build.  Links are stored once, from the side that created them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from haul.sandbox.people import User
from haul.sandbox.tracker.blobs import Blob
from haul.sandbox.tracker.structure.structure import Structure


@dataclass(frozen=True, slots=True)
class Entry:
    """One value of an organisation dictionary: a status, issue type, priority or resolution."""

    id: int
    key: str
    name_en: str
    name_ru: str
    order: int
    status_type: str | None = None  # statuses only: new, inProgress, paused, done, cancelled
    description: str | None = None  # None: derived from the names
    version: int = 1


class Dictionary:
    """The values of one dictionary, found by key or by numeric id."""

    def __init__(self, path: str, entries: list[Entry]) -> None:
        self.path = path  # the collection path in URLs: "statuses", "priorities", ...
        self.entries = entries
        self.by_key = {entry.key: entry for entry in entries}
        self.by_id = {entry.id: entry for entry in entries}

    def put(self, entry: Entry) -> None:
        """Add a new value or replace the one with the same id (an edit)."""
        old = self.by_id.get(entry.id)
        if old is None:
            self.entries.append(entry)
        else:
            self.entries[self.entries.index(old)] = entry
            del self.by_key[old.key]
        self.by_key[entry.key] = entry
        self.by_id[entry.id] = entry

    def lookup(self, value: object) -> Entry | None:
        """The entry with numeric id or key ``value``, else None."""
        return self.lookup_id(value) or (self.by_key.get(value) if isinstance(value, str) else None)

    def lookup_id(self, value: object) -> Entry | None:
        """The entry with numeric id ``value`` (an int or a string of digits), else None."""
        if isinstance(value, bool):
            return None
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        return self.by_id.get(value) if isinstance(value, int) else None


@dataclass(frozen=True, slots=True)
class LinkType:
    id: str
    inward: str
    outward: str


@dataclass(slots=True)
class Queue:
    id: int
    key: str
    name: str
    description: str
    lead: int  # uid
    default_type: str  # issue type key
    default_priority: str  # priority key
    next_number: int = 1  # the number the next auto-keyed issue gets
    version: int = 1  # bumped by each edit (PATCH /queues/{key})


@dataclass
class QueueGrants:
    """One queue's grants: per user (uid) and per group (id), the codes given to it itself
    (served by :mod:`sandbox.tracker.structure.queue_access`)."""

    users: dict[int, set[str]] = field(default_factory=dict)
    groups: dict[str, set[str]] = field(default_factory=dict)
    roles: dict[str, set[str]] = field(default_factory=dict)  # author, assignee, follower, ...
    version: int = 1  # bumped by each PATCH /queues/{key}/permissions


@dataclass(frozen=True, slots=True)
class Issue:
    """An issue header: everything a search hit shows.  Replace, never mutate."""

    seq: int  # creation order in its organisation; also id-space for generated sub-records
    id: str
    key: str
    queue: str
    number: int
    summary: str
    description: str | None
    type: str
    priority: str
    status: str
    previous_status: str | None
    resolution: str | None
    created_at: int
    updated_at: int
    status_start: int
    resolved_at: int | None
    created_by: int
    updated_by: int
    resolved_by: int | None
    assignee: int | None
    followers: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    version: int = 1
    unique: str | None = None
    extra: tuple[tuple[str, object], ...] = ()  # echo-only fields: estimates, dates, points
    # ids rendered as refs on read: components, versions, sprints, users, custom field values
    refs: tuple[tuple[str, object], ...] = ()
    comment_count: int = 0
    last_comment_at: int | None = None
    generated: bool = False  # sub-records come from the per-issue generator on first access
    aliases: tuple[str, ...] = ()  # keys it had in other queues before it was moved


@dataclass(slots=True)
class Comment:
    id: int
    long_id: str
    text: str
    created_by: int
    created_at: int
    updated_by: int
    updated_at: int
    version: int = 1
    attachment_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Worklog:
    id: int
    start: int
    duration_ms: int
    comment: str | None
    created_by: int
    created_at: int
    updated_by: int
    updated_at: int
    version: int = 1


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of a changelog entry; ``kind`` says how values render (a dictionary path or text)."""

    field: str
    # "statuses", "resolutions", "priorities", "issuetypes", "users", "text", "time", or
    # "value" (a structure or custom field, tags, followers: rendered as kept)
    kind: str
    before: object
    after: object


@dataclass(frozen=True, slots=True)
class NamedThen:
    """A dictionary value as a change shows it: its key, and the name it had then (a status
    renamed since keeps its old name in the history that mentions it)."""

    key: str
    display: str


@dataclass(slots=True)
class ChangelogEntry:
    id: str
    type: str
    updated_by: int
    updated_at: int
    fields: list[FieldChange] = field(default_factory=list)


@dataclass(slots=True)
class Attachment:
    id: str
    name: str
    mimetype: str
    blob: Blob
    created_by: int
    created_at: int
    comment_id: int | None = None

    @property
    def size(self) -> int:
        return self.blob.size


@dataclass(slots=True)
class ChecklistItem:
    id: str
    text: str
    checked: bool
    assignee: int | None = None
    deadline: int | None = None


@dataclass(slots=True)
class IssueRecords:
    """The sub-records of one issue, each list in id order."""

    comments: list[Comment] = field(default_factory=list)
    worklogs: list[Worklog] = field(default_factory=list)
    changelog: list[ChangelogEntry] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    checklist: list[ChecklistItem] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Link:
    """A link stored once, as seen from ``source`` (the issue it was created on)."""

    id: int
    type: str  # link type id
    source: str  # issue key
    target: str  # issue key
    direction: str  # "outward" or "inward", from the source's side
    created_by: int
    created_at: int


@dataclass(slots=True)
class Counters:
    """Next ids for records created at runtime; start above every generated id."""

    comment: int
    worklog: int
    link: int
    attachment: int
    changelog: int
    issue: int

    def take(self, name: str) -> int:
        value = getattr(self, name)
        setattr(self, name, value + 1)
        return value


RecordsFactory = Callable[["Org", Issue], IssueRecords]
Pairs = tuple[tuple[str, object], ...]
ValuesFactory = Callable[[Issue], tuple[Pairs, Pairs]]


@dataclass(slots=True)
class Limits:
    """The tracker's hard limits on imports (its documented values); a test may lower them
    (a 1 KB file limit) instead of uploading 128 MB."""

    file_bytes: int = 128 * 1024 * 1024
    comment_chars: int = 512_000
    comments_per_issue: int = 1000


@dataclass
class Org:
    """One organisation: its users, dictionaries, queues, issues and their records."""

    id: str
    role: str  # "source", "target" or "empty": only a label for the sandbox's own output
    seed: int
    users: dict[int, User]
    statuses: Dictionary
    issue_types: Dictionary
    priorities: Dictionary
    resolutions: Dictionary
    link_types: dict[str, LinkType]
    queues: dict[str, Queue]
    counters: Counters
    records_factory: RecordsFactory
    issues: dict[str, Issue] = field(default_factory=dict)
    links: dict[int, Link] = field(default_factory=dict)
    big_attachment_keys: frozenset[str] = frozenset()
    limits: Limits = field(default_factory=Limits)
    structure: Structure = field(default_factory=Structure)
    queue_grants: dict[str, QueueGrants] = field(default_factory=dict)  # seeded on first use
    # the org's workflows by id, and each queue's issue-type configuration (type key ->
    # (workflow id, resolution keys)): seeded on first use (sandbox.tracker.workflows.workflows)
    workflows: dict[str, Any] = field(default_factory=dict)
    queue_types: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = field(default_factory=dict)
    values_factory: ValuesFactory | None = None  # a generated issue's (extra, refs)
    _records: dict[str, IssueRecords] = field(default_factory=dict)
    _values: dict[str, tuple[Pairs, Pairs]] = field(default_factory=dict)
    _links_by_issue: dict[str, list[int]] = field(default_factory=dict)
    _issue_ids: dict[str, str] = field(default_factory=dict)
    _uniques: dict[str, str] = field(default_factory=dict)
    _logins: dict[str, int] = field(default_factory=dict)
    _moved: dict[str, str] = field(default_factory=dict)  # an old key -> the issue's key now
    # the logins of people who left the org: still listed and found (``dismissed``), as the
    # real services keep them, but no page access may be given to them
    left: set[str] = field(default_factory=set)
    # the organisation's language ("en" or "ru"): the names the service gives what it makes
    # itself (the group of every person: ``sandbox.groups``)
    language: str = "en"

    def __post_init__(self) -> None:
        self._logins = {user.login: user.uid for user in self.users.values()}
        for link in self.links.values():
            self._index_link(link)
        for issue in self.issues.values():
            self._index_issue(issue)

    # -- users ------------------------------------------------------------------------------
    def remove_user(self, login: str) -> bool:
        """The person leaves the org: no longer listed nor found (False: no such login)."""
        uid = self._logins.pop(login, None)
        return uid is not None and self.users.pop(uid, None) is not None

    def dismiss_user(self, login: str) -> bool:
        """The person leaves the org and stays listed as dismissed (False: no such login)."""
        if login not in self._logins:
            return False
        self.left.add(login)
        return True

    def find_user(self, value: object) -> User | None:
        """A user of this org by login, by uid (int or digits), or None."""
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            if value in self._logins:
                return self.users[self._logins[value]]
            value = int(value) if value.isdigit() else None
        return self.users.get(value) if isinstance(value, int) else None

    # -- issues -----------------------------------------------------------------------------
    def find_issue(self, key_or_id: str) -> Issue | None:
        """An issue by key, by a key it had before it was moved, or by its 24-hex id."""
        key = key_or_id if key_or_id in self.issues else self._issue_ids.get(key_or_id)
        key = key or self._moved.get(key_or_id)
        return self.issues.get(key) if key else None

    def find_unique(self, unique: str) -> Issue | None:
        key = self._uniques.get(unique)
        return self.issues.get(key) if key else None

    def put_issue(self, issue: Issue) -> None:
        """Add a new issue or replace the header of an existing one (same key)."""
        self.issues[issue.key] = issue
        self._index_issue(issue)

    def rekey_issue(self, old: Issue, new: Issue) -> None:
        """Store `new` in place of `old` under another key (a move): its records, values and
        links go with it, and the old key keeps finding it."""
        self.records(old)
        self._values[old.key] = self.values(old)
        del self.issues[old.key]
        self._records[new.key] = self._records.pop(old.key)
        self._values[new.key] = self._values.pop(old.key)
        for link_id in self._links_by_issue.pop(old.key, []):
            link = self.links[link_id]
            source = new.key if link.source == old.key else link.source
            target = new.key if link.target == old.key else link.target
            self.links[link_id] = Link(
                link.id, link.type, source, target, link.direction, link.created_by,
                link.created_at,
            )  # fmt: skip
            self._links_by_issue.setdefault(new.key, []).append(link_id)
        for alias, key in self._moved.items():
            if key == old.key:
                self._moved[alias] = new.key
        self._moved[old.key] = new.key
        self.put_issue(new)

    def _index_issue(self, issue: Issue) -> None:
        self._issue_ids[issue.id] = issue.key
        if issue.unique is not None:
            self._uniques[issue.unique] = issue.key

    def records(self, issue: Issue) -> IssueRecords:
        """The issue's sub-records, generated on first access for generated issues."""
        found = self._records.get(issue.key)
        if found is None:
            found = self.records_factory(self, issue) if issue.generated else IssueRecords()
            self._records[issue.key] = found
        return found

    def values(self, issue: Issue) -> tuple[Pairs, Pairs]:
        """``(extra, refs)`` of an issue: as edited, else a generated issue's drawn on first
        access, else its header's."""
        found = self._values.get(issue.key)
        if found is None:
            if not issue.generated or self.values_factory is None:
                return issue.extra, issue.refs
            found = self._values[issue.key] = self.values_factory(issue)
        return found

    def set_values(self, issue: Issue, extra: Pairs, refs: Pairs) -> None:
        """Replace an issue's ``(extra, refs)`` (an edit)."""
        self._values[issue.key] = (extra, refs)

    # -- links ------------------------------------------------------------------------------
    def add_link(self, link: Link) -> None:
        self.links[link.id] = link
        self._index_link(link)

    def _index_link(self, link: Link) -> None:
        self._links_by_issue.setdefault(link.source, []).append(link.id)
        self._links_by_issue.setdefault(link.target, []).append(link.id)

    def remove_link(self, link: Link) -> None:
        del self.links[link.id]
        for key in (link.source, link.target):
            self._links_by_issue[key].remove(link.id)

    def links_of(self, key: str) -> list[Link]:
        """Every link touching the issue, in id order."""
        return [self.links[link_id] for link_id in sorted(self._links_by_issue.get(key, ()))]
