"""What every route of the sandbox wiki shares: the error body, the caller and what they may
see (:class:`Call`), the request body, and the cursor listing envelope.

A page the caller may not read is refused with 403 ``FORBIDDEN`` (the wiki's error body), for
the page and for everything on it; listings and search leave it out. A write that needs more
than the caller's role (editing needs ``editor``) is the same 403.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from haul.sandbox.wiki.access import ROLES, Viewer, may_read, role_of
from haul.sandbox.wiki.model import Grid, Page, WikiOrg
from haul.sandbox.world import NotAuthorized, identify

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


class WikiError(Exception):
    """Rendered as the wiki's error body with `status`."""

    def __init__(self, status: int, code: str, message: str, debug: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.debug = status, code, message, debug

    def response(self) -> JSONResponse:
        body = {"error_code": self.code, "message": [self.message], "debug_message": self.debug}
        return JSONResponse(body, status_code=self.status)


def invalid(field: str, kind: str, message: str) -> WikiError:
    return WikiError(400, "VALIDATION_ERROR", f"{field}: {message}", f"{field}: {kind}")


def not_found(what: str) -> WikiError:
    return WikiError(404, "NOT_FOUND", f"No {what}.")


def forbidden(message: str, debug: str = "") -> WikiError:
    return WikiError(403, "FORBIDDEN", message, debug)


class Call:
    """Who calls, in which org's wiki, and what they may see there: every page lookup goes
    through :meth:`page`, :meth:`page_at` or :meth:`grid`, which refuse a page the caller's
    role does not reach with 403 ``FORBIDDEN``."""

    def __init__(self, request: Request) -> None:
        try:
            self.org, self.user, admin = identify(request.app.state.world, request)
        except NotAuthorized as exc:
            raise WikiError(401, "UNAUTHORIZED", str(exc)) from None
        self.wiki: WikiOrg = request.app.state.wiki.orgs[self.org.id]
        self.viewer = Viewer(self.user, self.wiki.groups.ids_of(self.user), admin)
        self.request = request

    def page(self, page_id: Any, *, need: str = "reader") -> Page:
        """The page by id if the caller holds `need` or a stronger role on it."""
        try:
            page = self.wiki.pages.get(int(page_id))
        except ValueError:
            page = None
        if page is None:
            raise not_found("page")
        return self.allowed(page, need)

    def page_at(self, slug: str, *, need: str = "reader") -> Page:
        page = self.wiki.page_by_slug(slug)
        if page is None:
            raise not_found("page")
        return self.allowed(page, need)

    def allowed(self, page: Page, need: str) -> Page:
        role = role_of(self.wiki, page, self.viewer)
        if role is None:
            raise forbidden("You have no access to this page.", f"page {page.id}")
        if ROLES.index(role) < ROLES.index(need):
            raise forbidden(f"This needs the {need} role on the page.", f"page {page.id}: {role}")
        return page

    def readable(self, pages: list[Page]) -> list[Page]:
        """The pages the caller may read, in the order given (listings and search)."""
        return [page for page in pages if may_read(self.wiki, page, self.viewer)]

    def grid(self, grid_id: str, *, need: str = "reader") -> Grid:
        grid = self.wiki.grids.get(grid_id)
        if grid is None:
            raise not_found("grid")
        self.allowed(self.page_of(grid), need)
        return grid

    def page_of(self, grid: Grid) -> Page:
        return self.wiki.pages[grid.page_id]


async def body_of(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise invalid("body", "value_error.jsondecode", "not valid JSON") from None
    if not isinstance(body, dict):
        raise invalid("body", "type_error.dict", "must be an object")
    return body


def required(body: dict[str, Any], name: str, kind: type | tuple[type, ...] = str) -> Any:
    if name not in body or body[name] is None:
        raise invalid(name, "value_error.missing", "field required")
    if not isinstance(body[name], kind) or (isinstance(body[name], bool) and kind is not bool):
        raise invalid(name, "type_error", f"wrong type {type(body[name]).__name__}")
    return body[name]


def page_size(request: Request) -> int:
    raw = request.query_params.get("page_size") or request.query_params.get("limit")
    if not raw:
        return DEFAULT_PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise invalid("page_size", "type_error.integer", "value is not a valid integer") from None
    if size == 0:
        return MAX_PAGE_SIZE
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise invalid("page_size", "value_error.number.not_le", f"must be 1 to {MAX_PAGE_SIZE}")
    return size


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(str(offset).encode()).decode()


def listing(request: Request, items: list[Any], render: Callable[[Any], Any]) -> JSONResponse:
    """The `{results, next_cursor, prev_cursor}` envelope over an offset cursor."""
    size = page_size(request)
    cursor = request.query_params.get("cursor")
    try:
        start = int(base64.urlsafe_b64decode(cursor.encode()).decode()) if cursor else 0
    except ValueError:
        raise invalid("cursor", "value_error", "invalid cursor") from None
    end = start + size
    return JSONResponse(
        {
            "results": [render(item) for item in items[start:end]],
            "next_cursor": _encode(end) if end < len(items) else None,
            "prev_cursor": _encode(max(0, start - size)) if start else None,
        }
    )


def ordered(request: Request, items: list[Any], keys: dict[str, Callable[[Any], Any]]) -> list[Any]:
    order_by = request.query_params.get("order_by")
    if order_by and order_by not in keys:
        raise invalid("order_by", "type_error.enum", f"one of {', '.join(keys)}")
    direction = request.query_params.get("order_direction", "asc")
    if direction not in ("asc", "desc"):
        raise invalid("order_direction", "type_error.enum", "asc or desc")
    key = keys[order_by or next(iter(keys))]
    return sorted(items, key=key, reverse=direction == "desc")
