"""What the load writes for an entity and its sub-records, built from the staged records.

One place for the bodies, so the load sends them and `prints` compares them the same
way. People map strictly here (the users file, or the same login; never `default_user`): a
lead or a participant of an entity holds a role on it (OWNER, MEMBER, ...), and a default
account must not. Whom it leaves out is counted (`dropped`), as is what no endpoint carries:
an entity comment's date and author (a provenance line names them in its text), a file's or a
link's date and author.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from haul.pipelines.specs import RecordFailure
from haul.pipelines.tracker.entities.access import EntityAccess, EntityHolders, wanted
from haul.pipelines.tracker.export_columns import KINDS
from haul.pipelines.tracker.transform import Transform, import_time
from haul.state.store import StagedRecord, StagingStore

PARENT_TYPE = {"portfolio": "portfolio", "project": "portfolio", "goal": "goal"}
PEOPLE_LISTS = ("teamUsers", "clients", "followers")
PLAIN = ("description", "entityStatus", "start", "end")
CLEARABLE = ("description", "start", "end", "lead")  # a status is never empty
PROVENANCE = "Originally by {author} at {at}:"


@dataclass
class EntityBodies:
    """The bodies of one target org's load; `me` is the migrating admin's target login."""

    store: StagingStore
    transform: Transform
    holders: EntityHolders
    me: str
    issue_key: Callable[[str], str] | None = None  # a source issue key -> its target key
    _kinds: dict[str, str] = field(default_factory=dict)

    def kind_of(self, entity_id: str) -> str:
        """The type of a staged entity."""
        if not self._kinds:
            for kind in KINDS:
                self._kinds.update(dict.fromkeys(self.store.source_ids(kind), kind))
        if entity_id not in self._kinds:
            raise RecordFailure(f"entity {entity_id} is not staged: run haul extract")
        return self._kinds[entity_id]

    def entity(self, entity_id: str) -> StagedRecord:
        """The staged entity of a sub-record (its parent)."""
        found = self.store.get_record(self.kind_of(entity_id), entity_id)
        if found is None:
            raise RecordFailure(f"entity {entity_id} is not staged: run haul extract")
        return found

    # -- people ----------------------------------------------------------------------------

    def login(self, ref: Any) -> str | None:
        """A source user's target login, strictly (None when it maps to no one)."""
        return self.holders.login_of(ref) if ref else None

    def creator(self, record: StagedRecord) -> str:
        """Who the import names as the entity's author: its mapped author; where it maps to no
        one, the migrating admin, never the default user (unlike an issue's): the author holds
        the AUTHOR role, whose levels (write and grant too) the default account never had."""
        return self.login(record.raw.get("createdBy")) or self.me

    # -- the entity ------------------------------------------------------------------------

    def access(self, record: StagedRecord) -> EntityAccess:
        """The entity's target access; one staged without its permissions cannot be made."""
        permissions = self.store.get_record("entity_access", f"{record.source_id}/access")
        if permissions is None:
            raise RecordFailure(
                f"{record.entity} {record.source_id} was staged without its permissions: "
                "run haul extract"
            )
        return wanted(record.raw, permissions.raw, self.holders)

    def content(self, record: StagedRecord) -> dict[str, Any]:
        """The entity's fields beyond its summary and parent, as the target takes them."""
        fields = record.raw.get("fields") or {}
        body: dict[str, Any] = {name: fields.get(name) for name in PLAIN if fields.get(name)}
        if "start" in body or "end" in body:
            body.update(
                {name: import_time(body[name]) for name in ("start", "end") if name in body}
            )
        if body.get("description"):
            where = f"the description of {record.entity} {record.source_id}"
            body["description"] = self.transform.settled_text(body["description"], where)
        lead = self._person(fields.get("lead"), "lead")
        if lead:
            body["lead"] = lead
        author = self._person(fields.get("author") or record.raw.get("createdBy"), "author")
        if author:  # a restricted entity is made with the admin as author: see import_body
            body["author"] = author
        for name in PEOPLE_LISTS:
            people = [self._person(ref, name) for ref in fields.get(name) or []]
            if kept := [login for login in people if login]:
                body[name] = kept
        if fields.get("tags"):
            body["tags"] = list(fields["tags"])
        return body

    def edit(self, record: StagedRecord, parent_target: str | None) -> dict[str, Any]:
        """The fields that bring a loaded entity up to its changed source: its summary, its
        parents (when its primary parent is loaded), its content, and what the source no
        longer has, cleared (a content edit sends only the fields it names)."""
        content = self.content(record)
        cleared: dict[str, Any] = {name: None for name in CLEARABLE if name not in content}
        cleared |= {name: [] for name in (*PEOPLE_LISTS, "tags") if name not in content}
        summary = (record.raw.get("fields") or {}).get("summary")
        return {"summary": summary, **self.parents(record, parent_target), **cleared, **content}

    def _person(self, ref: Any, field_name: str) -> str | None:
        """A person of a field (`field_name` says which, for `not_carried`), strictly."""
        return self.login(ref) if ref else None

    def parents(self, record: StagedRecord, parent_target: str | None) -> dict[str, Any]:
        """``parentEntity``: the primary parent's target id, and the secondary ones loaded."""
        if parent_target is None:
            return {}
        secondary = []
        parents = (record.raw.get("fields") or {}).get("parentEntity") or {}
        for ref in parents.get("secondary") or []:
            row = self.store.ledger.get(PARENT_TYPE[record.entity], str(ref.get("id")))
            if row is not None and row.status == "done" and row.target_id:
                secondary.append(row.target_id)
        return {"parentEntity": {"primary": parent_target, "secondary": secondary}}

    def import_body(self, record: StagedRecord, parent_target: str | None) -> dict[str, Any]:
        """The `_import` body: a restricted entity is made team-only with its summary and
        parent alone, the migrating admin its author; its people (its author too) and content
        follow its permissions (`access`)."""
        access = self.access(record)
        fields: dict[str, Any] = {"summary": (record.raw.get("fields") or {}).get("summary")}
        fields |= self.parents(record, parent_target)
        if access.restricted:
            # the AUTHOR role reads a new entity: until its access row has set the source's
            # ACL (which may refuse its author), that role is the migrating admin's
            fields |= {"teamAccess": True, "author": self.me}
        else:
            fields |= self.content(record)
        return {
            "fields": fields,
            "createdAt": import_time(record.raw["createdAt"]),
            "createdBy": self.creator(record),
        }

    # -- sub-records -----------------------------------------------------------------------

    def comment_text(self, record: StagedRecord) -> str:
        """The comment's text under a provenance line naming its original author and time."""
        raw = record.raw
        author = raw.get("createdBy") or {}
        uid = str(author.get("id")) if isinstance(author, dict) else str(author)
        login = self.transform.users.source_logins.get(uid, uid)
        line = PROVENANCE.format(author=login, at=raw.get("createdAt"))
        where = f"{record.entity} {record.source_id}"
        return f"{line}\n\n{self.transform.settled_text(raw.get('text') or '', where)}"

    def checklist(self, record: StagedRecord) -> list[dict[str, Any]]:
        """The checklist items as the target takes them (an assignee mapped strictly)."""
        items = []
        for item in record.raw.get("items") or []:
            body: dict[str, Any] = {
                "text": item.get("text") or "",
                "checked": bool(item.get("checked")),
            }
            assignee = self._person(item.get("assignee"), "checklist assignee")
            if assignee:
                body["assignee"] = assignee
            deadline = item.get("deadline")
            if isinstance(deadline, dict) and deadline.get("date"):
                body["deadline"] = {"date": deadline["date"], "deadlineType": "date"}
            items.append(body)
        return items

    def link_other(self, record: StagedRecord, target_of: Callable[[str, str], str | None]) -> str:
        """The other end of a link in the target: an issue's target key, or the other entity's
        target id (`target_of(type, source id)`)."""
        raw = record.raw
        end = raw.get("linkFieldValues") or {}
        if raw.get("entityType") == "issue":
            key = str(end.get("key"))
            return self.issue_key(key) if self.issue_key else self.transform.queues.key(key)
        other = target_of(str(raw.get("entityType")), str(end.get("id")))
        if other is None:
            raise RecordFailure(
                f"the linked {raw.get('entityType')} {end.get('id')} is not in the target: "
                "move its type too ([scope] entities), then haul load --retry-failed"
            )
        return other


def not_carried(bodies: EntityBodies, kinds: tuple[str, ...]) -> Counter[str]:
    """What the load leaves out of the staged entities of `kinds`, counted from the store:
    what no endpoint carries, and the people who map to no target user."""
    store, dropped = bodies.store, Counter[str]()
    staged = {kind: store.source_ids(kind) for kind in kinds}
    every = set().union(*staged.values()) if staged else set()
    for kind in kinds:
        for record in store.iter_records(kind):
            fields = record.raw.get("fields") or {}
            people = [("lead", fields.get("lead"))] if fields.get("lead") else []
            people += [(name, ref) for name in PEOPLE_LISTS for ref in fields.get(name) or []]
            for name, ref in people:
                if bodies.login(ref) is None:
                    dropped[f"{kind} {name}: no target user (never the default user)"] += 1
    for entity, what in UNCARRIED.items():
        count = sum(
            1
            for record in store.iter_records(entity)
            if record.parent in every and (entity != "entity_link" or loads_link(record, every))
        )
        if count:
            dropped[f"{entity}: {what}"] += count
    return dropped


def loads_link(record: StagedRecord, staged: Collection[str]) -> bool:
    """Whether this side of a link loads it: a link to an issue, or to an entity not among the
    `staged` ids, always; a link between two staged entities shows on both and loads from the
    smaller id's side only."""
    other = str((record.raw.get("linkFieldValues") or {}).get("id"))
    issue = record.raw.get("entityType") == "issue"
    return issue or other not in staged or (record.parent or "") < other


UNCARRIED = {
    "entity_comment": "its date and author (no import endpoint: a provenance line names them)",
    "entity_attachment": "its date and uploader (no import endpoint)",
    "entity_link": "its date and author (no import endpoint)",
}
