"""The planning layer's specs: projects, portfolios and goals with what hangs off them.

They load after the issues and their links (`Phase.PLANNING`), each entity tree parents first (a
portfolio, the portfolios and projects under it; a goal, the goals under it), through the admin
`_import` with its original creation time and mapped author. Under each entity, in order:

1. its access (`entity_access`): the entity was made team-only with its summary alone when the
   source restricts it, so nobody the source refused reads it at any instant; the access row
   narrows first (team-only), sets the ACL, writes the content (people, status, description,
   dates), and opens the entity last when the source had it open. A holder that maps to no
   one leaves it team-only to its mapped owner and the migrating admin, and fails the row;
2. its comments (no import: made by the migrating admin, a provenance line naming the
   original author and time), its checklist, its files (a temporary upload, then attached);
3. the entities under it (their parents' access is in place before they exist).

Links (`entity_link`, `Phase.PLANNING_LINKS`) wait for both ends: an issue of the migration or another
entity. A link between two entities shows on both; it loads from one side.

A later run carries what changed at the source (`refresh`): an entity's summary, parents and
content, where the target's differ, through the same narrow-grant-write-open steps; its
permissions; a comment's text; a checklist (cleared and made again). New comments, files and
links are new rows; what the source removed is reported, as everywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.errors import AmbiguousWriteError, NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.specs import EntitySpec, Order, Phase, Planned, RecordFailure, Ref, staged_bytes
from haul.pipelines.tracker.entities.access import EntityAccess, current, edit
from haul.pipelines.tracker.entities.bodies import PARENT_TYPE, EntityBodies, loads_link
from haul.pipelines.tracker.entities.extract import FIELDS
from haul.pipelines.tracker.entities.prints import EntityPrints
from haul.pipelines.tracker.export_columns import KINDS
from haul.pipelines.tracker.target import LinkWaits
from haul.state.store import StagedRecord, StagingStore

PHASE = Phase.PLANNING  # after the issues and their links
MAX_REMADE = 3  # a checklist cleared and made again after lost replies, at most
SUB_SPECS = ("entity_access", "entity_comment", "entity_checklist", "entity_attachment")


def _kinds(store: StagingStore) -> dict[str, str]:
    return {source_id: kind for kind in KINDS for source_id in store.source_ids(kind)}


def plan_entities(kind: str) -> Callable[[StagingStore], Iterator[Planned]]:
    """Every staged entity of `kind`, under its primary parent when that one moves too."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        parents = store.source_ids(PARENT_TYPE[kind])
        for record in store.iter_records(kind):
            parent = Ref(PARENT_TYPE[kind], record.parent) if record.parent in parents else None
            yield Planned(record, parent, str(record.raw.get("createdAt") or ""))

    return plan


def plan_under_entity(entity: str) -> Callable[[StagingStore], Iterator[Planned]]:
    """Every staged `entity` record of a staged entity, under it, oldest first."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        kinds = _kinds(store)
        for record in store.iter_records(entity):
            if record.parent in kinds:
                sort_key = str(record.raw.get("createdAt") or "")
                yield Planned(record, Ref(kinds[record.parent], record.parent), sort_key)

    return plan


def plan_links(store: StagingStore) -> Iterator[Planned]:
    """A link to an issue; a link between two entities from one side only (the smaller id's,
    when both are staged)."""
    kinds = _kinds(store)
    for record in store.iter_records("entity_link"):
        if record.parent in kinds and loads_link(record, kinds):
            yield Planned(record, Ref(kinds[record.parent], record.parent))


ENTITY_PLANS = {
    **{entity: plan_under_entity(entity) for entity in SUB_SPECS},
    **{kind: plan_entities(kind) for kind in KINDS},
    "entity_link": plan_links,
}


@dataclass
class EntityLoad:
    """Everything the planning layer's specs need to write to one target org."""

    client: TrackerClient
    store: StagingStore
    bodies: EntityBodies
    prints: EntityPrints
    current_key: Callable[[str], str]  # a source issue key -> the key it is staged under now
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def specs(self, kinds: tuple[str, ...]) -> list[EntitySpec]:
        """The specs of the entity types in scope (none: no spec), in the order siblings load."""
        if not kinds:
            return []
        prints = self.prints
        access, comment, checklist = prints.access(), prints.comment(), prints.checklist()
        attachment, link = prints.attachment(), prints.link()
        return [
            EntitySpec("entity_access", "entity_access", ENTITY_PLANS["entity_access"],
                       self.send_access, self.find_access, refresh=self.refresh_access,
                       order=Order(PHASE, sends_conflicts=True), fingerprint=access),
            EntitySpec("entity_comment", "entity_comment", ENTITY_PLANS["entity_comment"],
                       self.send_comment, comment.find, refresh=self.refresh_comment,
                       order=Order(PHASE), fingerprint=comment),
            EntitySpec("entity_checklist", "entity_checklist", ENTITY_PLANS["entity_checklist"],
                       self.send_checklist, checklist.find, refresh=self.refresh_checklist,
                       order=Order(PHASE), fingerprint=checklist),
            EntitySpec("entity_attachment", "entity_attachment",
                       ENTITY_PLANS["entity_attachment"], self.send_attachment, attachment.find,
                       order=Order(PHASE), fingerprint=attachment),
            *(self._entity_spec(kind) for kind in KINDS if kind in kinds),
            EntitySpec("entity_link", "entity_link", plan_links, self.send_link, link.find,
                       requires=self._link_ends, order=Order(Phase.PLANNING_LINKS), fingerprint=link),
        ]  # fmt: skip

    def _entity_spec(self, kind: str) -> EntitySpec:
        printed = self.prints.entity(kind)
        return EntitySpec(
            kind, kind, ENTITY_PLANS[kind], self.send_entity, printed.find,
            refresh=self.refresh_entity, order=Order(PHASE), fingerprint=printed,
        )  # fmt: skip

    def _made(self, entity: str, target_id: str) -> str:
        self.changes[(entity, "created")] += 1
        return target_id

    # -- the entity and its access ------------------------------------------------------

    async def send_entity(self, record: StagedRecord, parent: str | None) -> str:
        body = self.bodies.import_body(record, parent)
        reply = await self.client.import_entity(record.entity, body)
        return self._made(record.entity, str(reply["id"]))

    async def send_access(self, record: StagedRecord, entity_id: str | None) -> str:
        """Narrow, grant, write the content, then open: see the module docstring."""
        if entity_id is None:
            raise RecordFailure(f"the entity of {record.source_id} is not loaded")
        entity = self.bodies.entity(record.parent or "")
        found = await self.client.get_entity(entity.entity, entity_id, fields="teamAccess")
        await self._apply(entity, entity_id, self.bodies.content(entity), found)
        return entity_id

    async def refresh_access(self, record: StagedRecord, entity_id: str) -> None:
        """Permissions changed at the source: applied the same way, narrowing first (the
        content is written only where the target's differs)."""
        entity = self.bodies.entity(record.parent or "")
        found = await self.client.get_entity(entity.entity, entity_id, fields=FIELDS)
        content = {} if self.prints.holds_content(entity, found) else self.bodies.content(entity)
        await self._apply(entity, entity_id, content, found)
        self.changes[("entity_access", "updated")] += 1

    async def refresh_entity(self, record: StagedRecord, entity_id: str) -> None:
        """An entity changed at the source (its summary, parents, content or team-only flag):
        edited through its access, so a newly restricted one is narrowed before anything
        else is written, and one opened at the source is opened last. One whose change the
        target does not show (a comment added moves the entity's `updatedAt`) is not edited."""
        found = await self.client.get_entity(record.entity, entity_id, fields=FIELDS)
        parent = record.parent and self._target_of(PARENT_TYPE[record.entity], record.parent)
        edit = {} if self.prints.holds(record, found) else self.bodies.edit(record, parent or None)
        await self._apply(record, entity_id, edit, found)
        if edit:
            self.changes[(record.entity, "updated")] += 1

    async def _apply(
        self, entity: StagedRecord, entity_id: str, fields: dict[str, Any], found: dict[str, Any]
    ) -> None:
        """Narrow (team-only) if the source restricts it, set the ACL, write `fields`, then
        open it if the source has it open (`found`: the target entity with its `teamAccess`);
        fail the row when a holder maps to no one."""
        want = self.bodies.access(entity)
        kind = entity.entity
        team_only = bool((found.get("fields") or {}).get("teamAccess"))
        if want.team_access and not team_only:
            await self.client.update_entity(kind, entity_id, {"fields": {"teamAccess": True}})
        await self._set_acl(kind, entity_id, want)
        if fields:
            await self.client.update_entity(kind, entity_id, {"fields": fields})
        if not want.team_access and team_only:
            await self.client.update_entity(kind, entity_id, {"fields": {"teamAccess": False}})
        if want.unmapped:
            raise RecordFailure(
                f"{kind} {entity.source_id} ({_summary(entity)}): {', '.join(want.unmapped)} maps"
                " to no target holder (mapping.users_file, mapping.groups_file): it is"
                " team-only to its owner and the migrating admin; map them, then haul load"
                " --retry-failed"
            )

    async def find_access(
        self, record: StagedRecord, entity_id: str | None, unclaimed: Callable[[str], bool]
    ) -> str | None:
        """The entity, once its access and content are what they should be; never for one
        that fails closed (its row stays failed, naming the holders)."""
        entity = self.bodies.entity(record.parent or "")
        if self.bodies.access(entity).unmapped:
            return None
        return await self.prints.access().find(record, entity_id, unclaimed)

    async def _set_acl(self, kind: str, entity_id: str, want: EntityAccess) -> None:
        reply = await self.client.get_entity_permissions(kind, entity_id)
        change = edit(current(reply, want.team_access).acl, want.acl)
        if change:
            await self.client.edit_entity_permissions(kind, entity_id, change)

    # -- sub-records ----------------------------------------------------------------------

    def _entity_of(self, record: StagedRecord) -> str:
        return self.bodies.kind_of(record.parent or "")

    async def send_comment(self, record: StagedRecord, entity_id: str | None) -> str:
        if entity_id is None:
            raise RecordFailure(f"the entity of comment {record.source_id} is not loaded")
        body = {"text": self.bodies.comment_text(record)}
        reply = await self.client.create_entity_comment(self._entity_of(record), entity_id, body)
        return self._made("entity_comment", str(reply["id"]))

    async def refresh_comment(self, record: StagedRecord, target_id: str) -> None:
        """A comment edited at the source: its text (under its provenance line), edited."""
        entity_id = self._target_of(self._entity_of(record), record.parent or "")
        if entity_id is None:
            raise RecordFailure(f"the entity of comment {record.source_id} is not loaded")
        body = {"text": self.bodies.comment_text(record)}
        await self.client.update_entity_comment(self._entity_of(record), entity_id, target_id, body)
        self.changes[("entity_comment", "updated")] += 1

    async def refresh_checklist(self, record: StagedRecord, target_id: str) -> None:
        """A checklist changed at the source (an item added, edited, checked, moved or
        removed): the target's is cleared and made again, in the source's order. The pair may
        be repeated: after a lost reply it is made again from clear, and a kill between the two
        leaves the row to refresh on the next run."""
        kind = self._entity_of(record)
        entity_id = self._target_of(kind, record.parent or "")
        if entity_id is None:
            raise RecordFailure(f"the entity of checklist {record.source_id} is not loaded")
        items = self.bodies.checklist(record)
        for _ in range(MAX_REMADE):
            await self.client.clear_entity_checklist(kind, entity_id)
            try:
                if items:
                    await self.client.add_entity_checklist_items(kind, entity_id, items)
            except AmbiguousWriteError:
                continue
            self.changes[("entity_checklist", "updated")] += 1
            return
        raise RecordFailure(f"checklist {record.source_id}: its items' outcome stayed uncertain")

    async def send_checklist(self, record: StagedRecord, entity_id: str | None) -> str:
        if entity_id is None:
            raise RecordFailure(f"the entity of checklist {record.source_id} is not loaded")
        items = self.bodies.checklist(record)
        if items:  # else emptied at the source before it was ever loaded: nothing to add
            await self.client.add_entity_checklist_items(self._entity_of(record), entity_id, items)
        return self._made("entity_checklist", f"{entity_id}/checklist")

    async def send_attachment(self, record: StagedRecord, entity_id: str | None) -> str:
        if entity_id is None:
            raise RecordFailure(f"the entity of file {record.source_id} is not loaded")
        kind = self.bodies.kind_of(record.parent or "")
        source = await staged_bytes(self.store, record, drained=kind)
        upload = await self.client.upload_temporary_file(str(record.raw["name"]), source)
        await self.client.attach_entity_file(kind, entity_id, str(upload["id"]))
        return self._made("entity_attachment", str(upload["id"]))

    async def send_link(self, record: StagedRecord, entity_id: str | None) -> str:
        if entity_id is None:
            raise RecordFailure(f"the entity of link {record.source_id} is not loaded")
        other = self.bodies.link_other(record, self._target_of)
        end = "issue" if record.raw.get("entityType") == "issue" else "entity"
        body = {"relationship": record.raw.get("type"), end: other}
        try:
            reply = await self.client.create_entity_link(self._entity_of(record), entity_id, body)
        except NotFoundError as exc:
            (wanted,) = self._link_ends(record)
            if end == "issue" and self.store.ledger.get(*wanted) is None:
                raise LinkWaits(wanted.source_id) from exc  # its queue is not migrated yet
            raise RecordFailure(
                f"the linked {end} {other} is not in the target: move it too, then haul load"
                " --retry-failed"
            ) from exc
        return self._made("entity_link", str(reply["id"]))

    def _target_of(self, entity: str, source_id: str) -> str | None:
        row = self.store.ledger.get(entity, source_id)
        return row.target_id if row is not None and row.status == "done" else None

    def _link_ends(self, record: StagedRecord) -> list[Ref]:
        """Both ends first: the other entity, or the issue (under its current key)."""
        end = record.raw.get("linkFieldValues") or {}
        if record.raw.get("entityType") == "issue":
            return [Ref("issue", self.current_key(str(end.get("key"))))]
        return [Ref(str(record.raw.get("entityType")), str(end.get("id")))]


def _summary(entity: StagedRecord) -> str:
    return str((entity.raw.get("fields") or {}).get("summary") or "")[:60]
