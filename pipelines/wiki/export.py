"""The wiki's export tables: pages, attachments (metadata; the bytes stay in the blob store),
comments, and one table per grid (its own columns, typed after the grid's, a row per grid row).

People on the wiki's replies carry their login (`username`) and display name themselves.

A page is restricted when its access does not resolve to all staff (a custom policy, or one it
inherits): to the holders of the entries that reach it. A page staged without its access is
restricted too (who reads it is unknown: fail closed). Its comments, files and grids follow
it; a grid on a restricted page is restricted as a whole (its table's name holds its title).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from haul.pipelines.config import Config
from haul.pipelines.export.columns import (
    blob_sha256,
    identifier,
    parent,
    timestamp,
    user,
    value,
)
from haul.pipelines.export.id_map import Identity, Lookups, register_identity
from haul.pipelines.export.tables import (
    BrokenTable,
    Column,
    ColumnType,
    ExportContext,
    Family,
    Item,
    Restriction,
    Table,
    each_table,
)
from haul.pipelines.wiki.access import ALL_STAFF, readers, staged_with_access
from haul.pipelines.wiki.content import SlugMap
from haul.state.store import StagedRecord, StagingStore

SERVICE = "wiki"
PAGE = parent("page_slug", "the slug of the page it belongs to (at the source)")
GRID_TYPES: dict[str, ColumnType] = {"number": "float", "checkbox": "bool", "date": "date"}


def wiki_login(item: Item, ref: dict[str, Any]) -> Any:
    """The wiki's people carry their login themselves."""
    return ref.get("username")


def _display(prefix: str, doc: str, *path: str) -> tuple[Column, Column]:
    login, _ = user(prefix, doc, *path, login=wiki_login)
    name = Column(
        f"{prefix}_name", "string", f"{doc}: display name",
        lambda item: (item.get(*path) or {}).get("display_name"),
    )  # fmt: skip
    return login, name


def page_restriction(raw: dict[str, Any]) -> Restriction | None:
    """A staged page's restriction; None when all staff read it."""
    if not staged_with_access(raw):
        return Restriction(None)
    holders = readers(raw, None)
    return None if ALL_STAFF in holders else Restriction(tuple(holders))


def restricted_pages(store: StagingStore) -> dict[str, Restriction]:
    """Page slug -> its restriction, for the staged restricted pages."""
    found = {}
    for page in store.iter_records("wiki_page"):
        if (restriction := page_restriction(page.raw)) is not None:
            found[page.source_id] = restriction
    return found


def _pages(context: ExportContext) -> dict[str, Restriction]:
    return context.memo("wiki.restricted_pages", restricted_pages)


def of_page(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """A page's restriction."""
    return _pages(context).get(record.source_id)


def of_parent_page(record: StagedRecord, context: ExportContext) -> Restriction | None:
    """The restriction of the page a record belongs to."""
    return _pages(context).get(record.parent or "")


PAGES = Table("wiki_pages", "wiki_page", (
    identifier("slug", "the page's slug at the source", "slug"),
    identifier("id", "the page's numeric id at the source", "id"),
    value("title", "string", "title", "title"),
    timestamp("created_at", "when the page was created", "attributes", "created_at"),
    timestamp("modified_at", "when the page last changed", "attributes", "modified_at"),
    *_display("author", "who wrote the current revision", "active_revision", "author"),
    value("comments_count", "int", "comments on the page", "attributes", "comments_count"),
    value("content", "string", "the page's markdown, as the source holds it", "content"),
), doc="wiki pages under the configured roots", service=SERVICE, access=of_page)  # fmt: skip

ATTACHMENTS = Table("wiki_attachments", "wiki_attachment", (
    PAGE,
    identifier("id", "the file's id at the source", "id"),
    value("name", "string", "file name", "name"),
    value("size", "int", "size in bytes", "size"),
    value("mimetype", "string", "MIME type", "mimetype"),
    timestamp("created_at", "when it was attached", "created_at"),
    *_display("author", "who attached it", "user"),
    blob_sha256(),
), doc="files attached to wiki pages", service=SERVICE, access=of_parent_page)  # fmt: skip

COMMENTS = Table("wiki_comments", "wiki_comment", (
    PAGE,
    identifier("id", "the comment's id at the source", "id"),
    identifier("parent_id", "the comment it answers (empty: a thread's first)", "parent_id"),
    value("body", "string", "the comment's text", "body"),
    timestamp("created_at", "when it was written", "created_at"),
    *_display("author", "who wrote it", "author"),
), doc="comments on wiki pages, replies naming the comment they answer", service=SERVICE,
   access=of_parent_page)  # fmt: skip


def _rows_of(grid_id: str) -> Any:
    """The rows of one grid (its page's grids are read; only this one gives rows)."""

    def rows(record: StagedRecord) -> Iterable[dict[str, Any]]:
        return list(record.raw.get("rows") or []) if record.source_id == grid_id else []

    return rows


def _cell(index: int) -> Any:
    def read(item: Item) -> Any:
        cells = item.raw.get("row") or []
        return cells[index] if index < len(cells) else None

    return read


def grid_table(record: StagedRecord, restriction: Restriction | None = None) -> Table:
    """One grid: its row id, then one column per grid column, by slug; `restriction` is its
    page's."""
    columns = (record.raw.get("structure") or {}).get("columns") or []
    title = "".join(
        c if c.isalnum() else "_" for c in str(record.raw.get("title") or "grid").lower()
    )
    return Table(
        f"wiki_grid_{title.strip('_')}_{record.source_id[:8]}",
        "wiki_grid",
        (
            identifier("row_id", "the row's id at the source", "id"),
            *(
                Column(
                    str(c["slug"]),
                    GRID_TYPES.get(str(c.get("type")), "string"),
                    str(c.get("title") or c["slug"]),
                    _cell(i),
                )
                for i, c in enumerate(columns)
            ),
        ),
        doc=f"grid {record.raw.get('title')!r} on {record.parent}",
        service=SERVICE,
        parent=record.parent,  # read only the grids of its page, not every grid
        items=_rows_of(record.source_id),
        access=of_parent_page,
        restriction=restriction,
    )


def grid_tables(store: StagingStore) -> Iterable[Table | BrokenTable]:
    """A table per staged grid."""
    pages = restricted_pages(store)

    def build(record: StagedRecord) -> Table:
        restriction = pages.get(record.parent or "")
        try:
            return grid_table(record, restriction)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if restriction is None:
                raise
            # the error names the table, and so the grid's title: restricted too
            raise ValueError(
                f"a grid on a restricted page cannot be a table ({type(exc).__name__})"
            ) from None

    return each_table(
        store.iter_records("wiki_grid"),
        build,
        lambda record: f"wiki grid {record.source_id}",  # not its title: it may be restricted
        "wiki_grid",
    )


GRIDS = Family(
    "wiki_grid_<title>_<id>",
    grid_tables,
    doc="one table per grid: a row per grid row, a column per grid column (number: float, "
    "checkbox: bool, date: date, others: string)",
    service=SERVICE,
)

# the wiki's export tables, in the order `haul export --describe` lists them
TABLES = (PAGES, ATTACHMENTS, COMMENTS, GRIDS)


def _slug(record: StagedRecord, config: Config | None) -> str:
    return record.source_id


def _target_slug(target_id: str, record: StagedRecord, lookups: Lookups) -> str | None:
    """Where the configured roots put the page (None when no config says)."""
    config = lookups.config
    return None if config is None else SlugMap.of(config).target(record.source_id)


# the key map (`id_map`): pages by slug (the target's by id and slug), files by id
register_identity(Identity("wiki_page", _slug, _target_slug, of_page, SERVICE))
register_identity(Identity("wiki_attachment", access=of_parent_page, service=SERVICE))
