"""What every tracker export table writes the same way: who a row names, and who may read it.

People are referred to by id in the tracker's replies; an export names them by login, from the
staged users (`staged_logins`, read once per export): one person as `<prefix>_login` and
`<prefix>_name` (`person`), a list of people as a JSON list of logins (`people`). A checklist
(an issue's or an entity's) is one staged record whose items are a table's rows
(`checklist_items`).

Which staged tracker records the source restricts, for the export's access columns:
- An issue with an access list (`access`, people by id) is restricted to those people;
  what belongs to it (comments, worklogs, changelog entries, attachments, checklist items,
  remote links, and the flow model's rows about it) is as restricted as the issue.
- A link is restricted when either end is (its row names the other issue's title): to the
  people of that end, or to those of both ends when both are.
- A project, portfolio or goal with `teamAccess` is restricted to the READ holders of its
  staged permissions (users by login, groups by name, roles as the people they name on it:
  MEMBER its team, OWNER its lead, ...); its comments, checklist, files and links follow it.

Each rule reads a small dictionary built once per export (`ExportContext.memo`): the restricted
issues and entities, never the whole org.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from haul.pipelines.export.columns import user
from haul.pipelines.export.tables import Column, ExportContext, Item, Restriction
from haul.state.store import StagedRecord, StagingStore

# the entity kinds (parents' types first), and each role with the entity's field naming its
# people: the vocabulary the entities' load and every export's access columns share
KINDS = ("portfolio", "project", "goal")
ROLE_PEOPLE = {  # a role and the entity's field that names its people
    "AUTHOR": "author",
    "OWNER": "lead",
    "MEMBER": "teamUsers",
    "CLIENT": "clients",
    "FOLLOWER": "followers",
}


def staged_logins(store: StagingStore) -> dict[str, str]:
    """Staged user id -> login (the users dictionary is small: read once per export)."""
    return {row.source_id: str(row.raw.get("login")) for row in store.iter_records("user")}


def login_of(item: Item, ref: dict[str, Any]) -> Any:
    """A person's login: from the reference itself, else from the staged users by id."""
    return ref.get("login") or item.context.memo("tracker.logins", staged_logins).get(
        str(ref.get("id"))
    )


def person(prefix: str, doc: str, *path: str) -> tuple[Column, Column]:
    """`<prefix>_login` and `<prefix>_name` of the tracker user at `path`."""
    return user(prefix, doc, *path, login=login_of)


def _logins_of(item: Item, *path: str) -> list[Any] | None:
    people = item.get(*path)
    if not isinstance(people, list):
        return None
    return [login_of(item, ref) if isinstance(ref, dict) else ref for ref in people]


def people(name: str, doc: str, *path: str) -> Column:
    """A list of people at `path`, as a JSON list of their logins."""
    return Column(name, "json", doc, lambda item: _logins_of(item, *path))


def checklist_items(record: StagedRecord) -> Iterable[dict[str, Any]]:
    """An issue's checklist is one staged record; each item is a row."""
    items = record.raw.get("items")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else ()


def _person(ref: Any, logins: dict[str, str]) -> str:
    """`user <login>` for a reference to a person (its id when no staged user has it)."""
    if isinstance(ref, dict):
        login = ref.get("login") or logins.get(str(ref.get("id"))) or ref.get("id")
    else:
        login = logins.get(str(ref)) or ref
    return f"user {login}"


def restricted_issues(store: StagingStore) -> dict[str, Restriction]:
    """Issue key -> its restriction, for the staged issues with an access list."""
    logins = staged_logins(store)
    found = {}
    for issue in store.iter_records("issue"):
        people = issue.raw.get("access")
        if isinstance(people, list) and people:
            found[issue.source_id] = Restriction(
                tuple(sorted({_person(p, logins) for p in people}))
            )
    return found


def _issues(context: ExportContext) -> dict[str, Restriction]:
    return context.memo("tracker.restricted_issues", restricted_issues)


def of_issue(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """An issue's restriction (a flow model row's: its subject is the issue's key)."""
    return _issues(context).get(record.source_id)


def of_parent_issue(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """The restriction of the issue a record belongs to."""
    return _issues(context).get(record.parent or "")


def of_link(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """A link's: the restricted ends', their people in common when both are."""
    other = (record.raw.get("object") or {}).get("key")
    ends = [of_parent_issue(record, context), _issues(context).get(str(other))]
    return _narrowest([end for end in ends if end is not None])


def _narrowest(restrictions: list[Restriction]) -> Restriction | None:
    """One restriction that all of `restrictions` allow: the holders they share."""
    if not restrictions:
        return None
    if any(each.holders is None for each in restrictions):
        return Restriction(None)
    shared = set.intersection(*(set(each.holders or ()) for each in restrictions))
    return Restriction(tuple(sorted(shared)))


def restricted_entities(store: StagingStore) -> dict[str, Restriction]:
    """Entity id -> its restriction, for the staged team-only projects, portfolios, goals."""
    logins = staged_logins(store)
    found = {}
    for kind in KINDS:
        for entity in store.iter_records(kind):
            if (entity.raw.get("fields") or {}).get("teamAccess"):
                found[entity.source_id] = _entity_readers(store, entity, logins)
    return found


def _entity_readers(
    store: StagingStore, entity: StagedRecord, logins: dict[str, str]
) -> Restriction:
    """Who reads a team-only entity: its READ users and groups, and the people its READ roles
    name on it (MEMBER: its team, OWNER: its lead, ...)."""
    permissions = store.get_record("entity_access", f"{entity.source_id}/access")
    if permissions is None:  # staged without its permissions: who reads it is unknown
        return Restriction(None)
    held = (permissions.raw.get("acl") or {}).get("READ") or {}
    holders = {_person(ref, logins) for ref in held.get("users") or []}
    holders |= {_group(ref) for ref in held.get("groups") or []}
    fields = entity.raw.get("fields") or {}
    for role in held.get("roles") or []:
        named = fields.get(ROLE_PEOPLE.get(str(role), ""))
        refs = named if isinstance(named, list) else [named] if named else []
        holders |= {_person(ref, logins) for ref in refs}
    return Restriction(tuple(sorted(holders)))


def _group(ref: Any) -> str:
    if isinstance(ref, dict):
        return f"group {ref.get('name') or ref.get('display') or ref.get('id')}"
    return f"group {ref}"


def _entities(context: ExportContext) -> dict[str, Restriction]:
    return context.memo("tracker.restricted_entities", restricted_entities)


def of_entity(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """A project's, portfolio's or goal's restriction."""
    return _entities(context).get(record.source_id)


def of_parent_entity(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """The restriction of the entity a record belongs to; an entity link to a restricted
    issue is restricted too (its row names the issue's title)."""
    own = _entities(context).get(record.parent or "")
    other = None
    if record.entity == "entity_link" and record.raw.get("entityType") == "issue":
        other = _issues(context).get(str((record.raw.get("linkFieldValues") or {}).get("key")))
    return _narrowest([end for end in (own, other) if end is not None])
