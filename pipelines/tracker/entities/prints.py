"""What tells each entity record apart in the target: written once, for find and verify.

An entity by its summary, creation time and author (in its type's search), compared on every
field the load writes and its parents; its access by its team-only flag, its ACL (users as
target uids, groups as target ids, roles), its content and who reads it (everyone, or the READ
holders of it and of the parents it inherits from, roles resolved to people); a comment by its
text (the provenance line makes it unique); a checklist by its items (assignees and deadlines
too); a file by its name and size (verify adds the sha256 of the bytes read back); a link by
its relationship and other end. A sub-record lives in its entity, a container named
``<type>/<target id>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.downloads import HashSink
from haul.pipelines.specs import Fields, Fingerprint
from haul.pipelines.tracker.entities.access import (
    Acl,
    People,
    current,
    readers,
    target_people,
)
from haul.pipelines.tracker.entities.bodies import PARENT_TYPE, PEOPLE_LISTS, PLAIN, EntityBodies
from haul.pipelines.tracker.entities.extract import FIELDS
from haul.pipelines.tracker.export_columns import ROLE_PEOPLE
from haul.pipelines.tracker.timefmt import instant
from haul.pipelines.tracker.transform import ref_id
from haul.state.store import StagedRecord

TargetOf = Callable[[str, str], "str | None"]  # (ledger entity, source id) -> target id
MAX_DEPTH = 32  # parents an entity inherits access from, at most (a cycle stops there)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value else []


@dataclass
class EntityPrints:
    """The fingerprints of one target org's entities; `uids` maps a target login to its uid."""

    client: TrackerClient
    bodies: EntityBodies
    uids: dict[str, str]
    target_of: TargetOf

    def uid(self, login: str | None) -> str | None:
        return None if login is None else self.uids.get(login, login)

    def container(self, record: StagedRecord, parent: str | None) -> str | None:
        """Where a sub-record lives: its entity's type and target id."""
        if parent is None or record.parent is None:
            return None
        return f"{self.bodies.kind_of(record.parent)}/{parent}"

    # -- the entity --------------------------------------------------------------------------

    def entity(self, kind: str) -> Fingerprint:
        """An entity: summary, creation time and author, among its parent's children of its
        type (``<type>/<parent target id>``; a root's: ``<type>/``); verify compares its
        fields too."""

        async def listing(container: str) -> list[Fields]:
            parent = container.partition("/")[2]
            narrowed = {"filter": {"parentEntity": parent}} if parent else {"rootOnly": True}
            found = self.client.search_entities(kind, fields=FIELDS, body=narrowed)
            return [self._target_entity(item) async for item in found]

        return Fingerprint(
            self._entity,
            lambda record, parent: f"{kind}/{parent or ''}",
            listing,
            ("summary", "createdAt", "createdBy"),
        )

    def _entity(self, record: StagedRecord) -> Fields:
        content = self.bodies.content(record)
        fields = record.raw.get("fields") or {}
        parent = record.parent and self.target_of(PARENT_TYPE[record.entity], record.parent)
        return {
            "summary": fields.get("summary"),
            "createdAt": instant(record.raw.get("createdAt")),
            "createdBy": self.uid(self.bodies.creator(record)),
            "parent": parent or None,
            "secondary": self._wanted_secondary(record) if parent else [],
            **self._content(content),
        }

    def holds(self, record: StagedRecord, found: dict[str, Any]) -> bool:
        """Whether the target entity `found` (read with `FIELDS`) shows what the load writes
        of `record`: its summary, parents and content."""
        expected = self._entity(record)
        return {k: v for k, v in self._target_entity(found).items() if k in expected} == expected

    def _wanted_secondary(self, record: StagedRecord) -> list[str]:
        parents = (record.raw.get("fields") or {}).get("parentEntity") or {}
        ids = [self.target_of(PARENT_TYPE[record.entity], str(ref.get("id")))
               for ref in parents.get("secondary") or []]  # fmt: skip
        return sorted(target for target in ids if target)

    @staticmethod
    def _secondary(found: dict[str, Any]) -> list[str]:
        parents = (found.get("fields") or {}).get("parentEntity") or {}
        return sorted(str(ref.get("id")) for ref in parents.get("secondary") or [])

    def holds_content(self, record: StagedRecord, found: dict[str, Any]) -> bool:
        """Whether the target entity `found` shows the content the load writes of `record`."""
        expected = self._content(self.bodies.content(record))
        return self._target_content(found.get("fields") or {}) == expected

    def _content(self, body: dict[str, Any]) -> Fields:
        """The written content as compared: times as instants, people as uids, sorted."""
        fields: Fields = {name: body.get(name) for name in PLAIN}
        fields |= {name: instant(body.get(name)) for name in ("start", "end")}
        fields["lead"] = self.uid(body.get("lead"))
        fields |= {
            name: sorted(str(self.uid(p)) for p in body.get(name) or []) for name in PEOPLE_LISTS
        }
        fields["tags"] = sorted(body.get("tags") or [])
        return fields

    def _target_content(self, fields: dict[str, Any]) -> Fields:
        found: Fields = {name: fields.get(name) for name in PLAIN}
        found |= {name: instant(fields.get(name)) for name in ("start", "end")}
        found["lead"] = ref_id(fields.get("lead"))
        found |= {
            name: sorted(str(ref_id(p)) for p in fields.get(name) or []) for name in PEOPLE_LISTS
        }
        found["tags"] = sorted(fields.get("tags") or [])
        return found

    def _target_entity(self, item: dict[str, Any]) -> Fields:
        fields = item.get("fields") or {}
        primary = (fields.get("parentEntity") or {}).get("primary") or {}
        return {
            "id": str(item["id"]),
            "summary": fields.get("summary"),
            "createdAt": instant(item.get("createdAt")),
            "createdBy": ref_id(item.get("createdBy")),
            "parent": str(primary["id"]) if primary.get("id") else None,
            "secondary": self._secondary(item),
            **self._target_content(fields),
        }

    # -- its access ---------------------------------------------------------------------------

    def access(self) -> Fingerprint:
        """An entity's access: team-only or not, the ACL, and its content (written after)."""
        return Fingerprint(
            self._access,
            self.container,
            self._target_access,
            ("teamAccess", "acl", "content"),
        )

    def _access(self, record: StagedRecord) -> Fields:
        entity = self.bodies.entity(record.parent or "")
        wanted = self.bodies.access(entity)
        team = wanted.team_access
        return {
            **wanted.described(),
            "content": self._content(self.bodies.content(entity)),
            "readers": readers(team, self._chain(entity) if team else []),
        }

    def _chain(self, entity: StagedRecord) -> list[tuple[Acl, People]]:
        """The entity and each loaded parent it inherits access from, as the load makes them:
        each one's ACL and its people by role (target uids)."""
        chain: list[tuple[Acl, People]] = []
        node: StagedRecord | None = entity
        while node is not None and len(chain) < MAX_DEPTH:
            content = self.bodies.content(node)
            named = {**content, "author": content.get("author") or self.bodies.creator(node)}
            people = {
                role: [str(self.uid(login)) for login in _listed(named.get(name))]
                for role, name in ROLE_PEOPLE.items()
            }
            chain.append((self.bodies.access(node).acl, people))
            kind, parent = PARENT_TYPE[node.entity], node.parent
            loaded = parent is not None and self.target_of(kind, parent) is not None
            node = self.bodies.store.get_record(kind, parent) if loaded and parent else None
        return chain

    async def _target_access(self, container: str) -> list[Fields]:
        kind, _, entity_id = container.partition("/")
        found = await self.client.get_entity(kind, entity_id, fields=FIELDS)
        fields = found.get("fields") or {}
        reply = await self.client.get_entity_permissions(kind, entity_id)
        have = current(reply, bool(fields.get("teamAccess")))
        chain = [(have.acl, target_people(fields))]
        for ref in (reply.get("permissionSources") or []) if have.team_access else []:
            parent = str(ref.get("id"))
            above = await self.client.get_entity(PARENT_TYPE[kind], parent, fields=FIELDS)
            acl = current(await self.client.get_entity_permissions(PARENT_TYPE[kind], parent), True)
            chain.append((acl.acl, target_people(above.get("fields") or {})))
        return [{
            "id": entity_id,
            **have.described(),
            "content": self._target_content(fields),
            "readers": readers(have.team_access, chain),
        }]  # fmt: skip

    # -- sub-records --------------------------------------------------------------------------

    def comment(self) -> Fingerprint:
        """A comment: its text, provenance line included."""

        async def listing(container: str) -> list[Fields]:
            kind, _, entity_id = container.partition("/")
            found = self.client.iter_entity_comments(kind, entity_id)
            return [{"id": str(c["id"]), "text": c.get("text")} async for c in found]

        return Fingerprint(
            lambda record: {"text": self.bodies.comment_text(record)},
            self.container,
            listing,
            ("text",),
        )

    def checklist(self) -> Fingerprint:
        """An entity's checklist: its items (text, checked, assignee, deadline), in order."""

        async def listing(container: str) -> list[Fields]:
            kind, _, entity_id = container.partition("/")
            found = await self.client.get_entity(kind, entity_id, fields="checklistItems")
            items = (found.get("fields") or {}).get("checklistItems") or []
            listed = [
                [item.get("text"), bool(item.get("checked")), ref_id(item.get("assignee")),
                 instant((item.get("deadline") or {}).get("date"))]
                for item in items
            ]  # fmt: skip
            return [{"id": f"{entity_id}/checklist", "items": listed}]

        def expected(record: StagedRecord) -> Fields:
            items = self.bodies.checklist(record)
            return {"items": [
                [i["text"], i["checked"], self.uid(i.get("assignee")),
                 instant((i.get("deadline") or {}).get("date"))]
                for i in items
            ]}  # fmt: skip

        return Fingerprint(expected, self.container, listing, ("items",))

    def attachment(self) -> Fingerprint:
        """A file: name and size; verify adds the bytes."""

        async def listing(container: str) -> list[Fields]:
            kind, _, entity_id = container.partition("/")
            found = await self.client.list_entity_attachments(kind, entity_id)
            return [
                {"id": str(a["id"]), "name": a.get("name"), "size": int(a.get("size") or 0)}
                for a in found
            ]

        async def detail(container: str, found: Fields) -> Fields:
            sink = HashSink()
            await self.client.download_entity_file(found["id"], found["name"], sink)
            return {"sha256": sink.hexdigest()}

        def expected(record: StagedRecord) -> Fields:
            raw = record.raw
            return {
                "name": raw.get("name"),
                "size": int(raw.get("size") or 0),
                "sha256": record.blob,
            }

        return Fingerprint(expected, self.container, listing, ("name", "size"), detail)

    def link(self) -> Fingerprint:
        """A link: its relationship (as seen from its entity) and the other end."""

        async def listing(container: str) -> list[Fields]:
            kind, _, entity_id = container.partition("/")
            return [
                {"id": str(link["id"]), "type": link.get("type"), "other": _other_end(link)}
                for link in await self.client.list_entity_links(kind, entity_id)
            ]

        def expected(record: StagedRecord) -> Fields:
            other = self.bodies.link_other(record, self.target_of)
            return {"type": record.raw.get("type"), "other": other}

        return Fingerprint(expected, self.container, listing, ("type", "other"))


def _other_end(link: dict[str, Any]) -> str | None:
    end = link.get("linkFieldValues") or {}
    value = end.get("key") if link.get("entityType") == "issue" else end.get("id")
    return None if value is None else str(value)
