"""The sandbox wiki's state: per organisation, pages by id and slug, their access (see
:mod:`sandbox.wiki.access`), attachments, grids, comments, upload sessions, recovery tokens and
the org's groups. Plain objects, mutated by the routes under the event loop (one thread),
rendered into the wire shapes of the recorded live replies."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from haul.sandbox.groups import Groups
from haul.sandbox.people import User
from haul.sandbox.timefmt import format_ms
from haul.sandbox.wiki.access import PageAccess, Policy

PART_MIN = 5 * 1024 * 1024
PART_MAX = 16 * 1024 * 1024
COLUMN_EXTRAS = (
    "width", "width_units", "pinned", "color", "multiple", "format", "ticket_field", "mark_rows"
)  # fmt: skip


def wiki_time(ms: int) -> str:
    """An instant as the wiki writes it: 2025-12-28T15:24:07.430Z."""
    return format_ms(ms).replace("+0000", "Z")


def user_json(user: User) -> dict[str, Any]:
    return {
        "id": user.uid,
        "identity": {"uid": str(user.uid), "cloud_uid": user.cloud_uid},
        "username": user.login,
        "display_name": user.display,
        "is_dismissed": False,
        "affiliation": "staff",
    }


@dataclass
class Attachment:
    id: int
    name: str
    data: bytes
    mimetype: str
    author: User
    created_at: int

    def json(self, page: Page) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "is_downloadable": True,
            "download_url": f"/{page.slug}/.files/{self.name}",
            "size": str(len(self.data)),
            "description": "",
            "user": user_json(self.author),
            "created_at": wiki_time(self.created_at),
            "mimetype": self.mimetype,
            "has_preview": False,
            "check_status": "ready",
        }


@dataclass
class Column:
    slug: str
    title: str
    type: str
    required: bool = False
    select_options: list[str] | None = None
    description: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    # kept as written and read back: width, width_units, pinned, color, multiple, format,
    # ticket_field (which field of the row's ticket a ticket_field column shows), mark_rows
    extra: dict[str, Any] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "slug": self.slug,
            "title": self.title,
            "type": self.type,
            "required": self.required,
            **{name: self.extra.get(name) for name in COLUMN_EXTRAS},
            "select_options": self.select_options,
            "description": self.description,
        }


@dataclass
class Row:
    id: str
    cells: dict[str, Any]


@dataclass
class Grid:
    id: str
    title: str
    page_id: int
    created_at: int
    columns: list[Column] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    revision: int = 1
    default_sort: list[dict[str, str]] = field(default_factory=list)

    def row_json(self, row: Row) -> dict[str, Any]:
        return {
            "id": row.id,
            "row": [row.cells.get(c.slug) for c in self.columns],
            "pinned": None,
            "color": None,
        }

    def json(self, page: Page) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": wiki_time(self.created_at),
            "title": self.title,
            "page": {"id": page.id, "slug": page.slug},
            "structure": {
                "default_sort": [
                    {"slug": slug, "title": slug, "direction": direction}
                    for item in self.default_sort
                    for slug, direction in item.items()
                ],
                "columns": [column.json() for column in self.columns],
            },
            "rich_text_format": "yfm",
            "rows": [self.row_json(row) for row in self.rows],
            "revision": str(self.revision),
            "attributes": None,
            "user_permissions": None,
            "template_id": None,
        }


@dataclass
class Comment:
    id: int
    body: str
    author: User
    created_at: int
    parent_id: int | None = None
    inline_text: str | None = None

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "body": self.body,
            "inline_text": self.inline_text,
            "parent_id": self.parent_id,
            "author": user_json(self.author),
            "thread_id": None,
            "created_at": wiki_time(self.created_at),
            "is_deleted": False,
            "resolve_status": "unresolved",
            "reactions": [],
        }


@dataclass
class Page:
    id: int
    slug: str
    title: str
    content: str
    author: User
    created_at: int
    modified_at: int
    attachments: list[Attachment] = field(default_factory=list)
    grids: list[Grid] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    access: PageAccess = field(default_factory=PageAccess)


@dataclass
class UploadSession:
    id: str
    file_name: str
    file_size: int
    user: User
    created_at: int
    status: str = "not_started"
    parts: dict[int, bytes] = field(default_factory=dict)
    finished_at: int | None = None

    def json(self) -> dict[str, Any]:
        return {
            "session_id": self.id,
            "file_name": self.file_name,
            "file_size": self.file_size,
            "status": self.status,
            "user": user_json(self.user),
            "created_at": wiki_time(self.created_at),
            "finished_at": wiki_time(self.finished_at) if self.finished_at else None,
            "storage_type": "mds",
        }


@dataclass
class WikiOrg:
    """One organisation's wiki."""

    groups: Groups
    pages: dict[int, Page] = field(default_factory=dict)
    by_slug: dict[str, int] = field(default_factory=dict)
    sessions: dict[str, UploadSession] = field(default_factory=dict)
    grids: dict[str, Grid] = field(default_factory=dict)
    deleted: dict[str, list[Page]] = field(default_factory=dict)  # recovery token -> pages
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)  # move id -> result
    roots: list[str] = field(default_factory=list)  # the seeded trees' roots
    next_id: int = 1
    next_access_id: int = 100_000  # access ids count apart, so the seeded page ids stay put

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def new_access_id(self) -> str:
        self.next_access_id += 1
        return str(self.next_access_id)

    def add_page(self, page: Page) -> Page:
        self.pages[page.id] = page
        self.by_slug[page.slug] = page.id
        if not page.access.owner_entry_id:
            page.access.owner_entry_id = self.new_access_id()
        if page.access.policy.access_type == "inherited" and self.parent_of(page) is None:
            page.access.policy = Policy("all_staff", "editor")  # a top-level page cannot inherit
        return page

    def parent_of(self, page: Page) -> Page | None:
        """The nearest page above `page` by slug, or None for a top-level page."""
        slug = page.slug.rpartition("/")[0]
        while slug:
            if slug in self.by_slug:
                return self.pages[self.by_slug[slug]]
            slug = slug.rpartition("/")[0]
        return None

    def page_by_slug(self, slug: str) -> Page | None:
        page_id = self.by_slug.get(slug.strip("/").lower())
        return self.pages.get(page_id) if page_id is not None else None

    def subtree(self, root: Page) -> list[Page]:
        """The page and every page under it, parents before children (slug order)."""
        prefix = root.slug + "/"
        found = [p for p in self.pages.values() if p.slug == root.slug or p.slug.startswith(prefix)]
        return sorted(found, key=lambda p: p.slug)

    def comment_count(self, page: Page) -> int:
        return len(page.comments)


@dataclass
class WikiWorld:
    """Every org's wiki, by org id."""

    orgs: dict[str, WikiOrg]
