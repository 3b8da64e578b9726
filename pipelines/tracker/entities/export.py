"""Projects, portfolios and goals as export tables, with their comments, checklist items, files
and links ([scope] entities). One row per staged record (a checklist: one per item); people by
login, as the issues' tables name them."""

from __future__ import annotations

from haul.pipelines.export.columns import (
    as_json,
    blob_sha256,
    identifier,
    parent,
    timestamp,
    value,
)
from haul.pipelines.export.id_map import Identity, register_identity
from haul.pipelines.export.tables import Column, Item, Table
from haul.pipelines.tracker.export_columns import (
    KINDS,
    checklist_items,
    of_entity,
    of_parent_entity,
    people,
    person,
)
from haul.state.store import StagingStore

SERVICE = "tracker"


def _entity_types(store: StagingStore) -> dict[str, str]:
    """Staged entity id -> its type (few entities: read once per export)."""
    return {source_id: kind for kind in KINDS for source_id in store.source_ids(kind)}


def _entity_type(item: Item) -> str | None:
    return item.context.memo("tracker.entity_types", _entity_types).get(item.record.parent or "")


def _secondary_parents(item: Item) -> list[str] | None:
    refs = item.get("fields", "parentEntity", "secondary")
    return [str(ref.get("id")) for ref in refs if isinstance(ref, dict)] if refs else None


def _entity_table(name: str, kind: str, parents: str) -> Table:
    return Table(name, kind, (
        identifier("id", f"the {kind}'s id", "id"),
        value("short_id", "int", "its number in the org's list", "shortId"),
        value("summary", "string", "its title", "fields", "summary"),
        value("description", "string", "its description", "fields", "description"),
        value("status", "string", "its status key (draft, according_to_plan, at_risk, ...)",
              "fields", "entityStatus"),
        *person("lead", "who leads it", "fields", "lead"),
        parent("parent_id", f"the id of its primary parent (a {parents})"),
        Column("secondary_parent_ids", "json", f"its other parents ({parents}s), a JSON list",
               _secondary_parents),
        timestamp("start", "when it starts", "fields", "start"),
        timestamp("end", "when it is due to end", "fields", "end"),
        people("team_users", "its team, a JSON list of logins", "fields", "teamUsers"),
        people("clients", "its clients, a JSON list of logins", "fields", "clients"),
        people("followers", "who follows it, a JSON list of logins", "fields", "followers"),
        as_json("tags", "its tags, a JSON list", "fields", "tags"),
        value("team_access", "bool", "whether only its team (and those granted) may read it",
              "fields", "teamAccess"),
        timestamp("created_at", "when it was made", "createdAt"),
        *person("created_by", "who made it", "createdBy"),
        timestamp("updated_at", "when it last changed (a comment, file or link too)",
                  "updatedAt"),
    ), doc=f'the {kind}s ([scope] entities = "all", or naming {kind})',
       service=SERVICE, access=of_entity)  # fmt: skip


PORTFOLIOS = _entity_table("portfolios", "portfolio", "portfolio")
PROJECTS = _entity_table("projects", "project", "portfolio")
GOALS = _entity_table("goals", "goal", "goal")

ENTITY_ID = parent("entity_id", "the id of the project, portfolio or goal it belongs to")
ENTITY_TYPE = Column("entity_type", "string", "that entity's type (project, portfolio, goal)",
                     _entity_type)  # fmt: skip

ENTITY_COMMENTS = Table("entity_comments", "entity_comment", (
    ENTITY_ID,
    ENTITY_TYPE,
    identifier("id", "the comment's id", "id"),
    value("text", "string", "its text", "text"),
    *person("created_by", "who wrote it", "createdBy"),
    timestamp("created_at", "when it was written", "createdAt"),
    timestamp("updated_at", "when it was last edited", "updatedAt"),
), doc="the comments on projects, portfolios and goals", service=SERVICE,
   access=of_parent_entity)  # fmt: skip

ENTITY_CHECKLIST_ITEMS = Table("entity_checklist_items", "entity_checklist", (
    ENTITY_ID,
    ENTITY_TYPE,
    Column("position", "int", "the item's place in the checklist, from 0",
           lambda item: item.position),
    identifier("id", "the item's id", "id"),
    value("text", "string", "the item's text", "text"),
    value("checked", "bool", "whether it is done", "checked"),
    *person("assignee", "the item's assignee", "assignee"),
    timestamp("deadline", "the item's deadline", "deadline", "date"),
), doc="one row per checklist item of a project, portfolio or goal, in checklist order",
   service=SERVICE, items=checklist_items, access=of_parent_entity)  # fmt: skip

ENTITY_ATTACHMENTS = Table("entity_attachments", "entity_attachment", (
    ENTITY_ID,
    ENTITY_TYPE,
    identifier("id", "the file's id", "id"),
    value("name", "string", "its file name", "name"),
    value("size", "int", "its size in bytes", "size"),
    value("mimetype", "string", "its media type", "mimetype"),
    blob_sha256(),
    *person("created_by", "who attached it", "createdBy"),
    timestamp("created_at", "when it was attached", "createdAt"),
), doc="the files of projects, portfolios and goals (metadata; the bytes stay in the blob store)",
   service=SERVICE, access=of_parent_entity)  # fmt: skip

ENTITY_LINKS = Table("entity_links", "entity_link", (
    ENTITY_ID,
    ENTITY_TYPE,
    identifier("id", "the link's id", "id"),
    value("relationship", "string", "how entity_id relates to the other end (relates, depends "
          "on, works towards, ...)", "type"),
    value("other_type", "string", "the other end's type: issue, project, portfolio or goal",
          "entityType"),
    identifier("other_id", "the other end's id", "linkFieldValues", "id"),
    value("other_key", "string", "the other issue's key (an issue only)", "linkFieldValues",
          "key"),
    value("other_summary", "string", "the other end's title", "linkFieldValues", "summary"),
    *person("created_by", "who made the link", "createdBy"),
    timestamp("created_at", "when it was made", "createdAt"),
), doc=(
    "one row per link as each entity shows it (a link between two staged entities is in twice)"
), service=SERVICE, access=of_parent_entity)  # fmt: skip

TABLES = (
    PORTFOLIOS,
    PROJECTS,
    GOALS,
    ENTITY_COMMENTS,
    ENTITY_CHECKLIST_ITEMS,
    ENTITY_ATTACHMENTS,
    ENTITY_LINKS,
)

# the key map (`id_map`): projects, portfolios and goals by id (their URLs hold the id)
for _kind in KINDS:
    register_identity(Identity(_kind, access=of_entity, service=SERVICE))
