"""The tracker's three pagination styles, as reply headers.

- page numbers (``page``, ``perPage``): ``X-Total-Count`` (capped at 10 000), ``X-Total-Pages``,
  ``Link`` with absolute ``rel="first"``, ``rel="next"`` and a ``rel="seek"`` template;
- relative id cursor (``id``, ``perPage``): ``Link`` printed WITHOUT a scheme, like the real one;
- scroll: see :mod:`sandbox.tracker.search.scroll` and the search endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlencode

from starlette.requests import Request

from haul.sandbox.tracker.api.errors import ApiError

PAGE_CAP = 10_000
T = TypeVar("T")


def int_param(
    request: Request, name: str, default: int, *, low: int = 1, high: int | None = None
) -> int:
    """A positive integer query parameter; 400 when malformed or out of bounds."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"Parameter '{name}' must be an integer") from None
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ApiError(400, f"Parameter '{name}' must be {bounds}")
    return value


@dataclass(frozen=True, slots=True)
class Page:
    items: list
    headers: dict[str, str]


def page_of(request: Request, items: Sequence[T], *, default_per_page: int = 50) -> Page:
    """Slice ``items`` by ``page``/``perPage``; 400 past the 10 000-row cap."""
    per_page = int_param(request, "perPage", default_per_page)
    page = int_param(request, "page", 1)
    if page * per_page > PAGE_CAP:
        raise ApiError(400, f"Request exceeds {PAGE_CAP} items limit")
    visible = min(len(items), PAGE_CAP)
    pages = max(1, -(-visible // per_page))
    start = (page - 1) * per_page
    chunk = list(items[start : min(start + per_page, visible)])
    return Page(chunk, _page_headers(request, visible, pages, page, per_page))


def _page_headers(request: Request, total: int, pages: int, page: int, per_page: int) -> dict:
    params = [(k, v) for k, v in request.query_params.multi_items() if k not in ("page", "perPage")]
    base = f"{request.url.scheme}://{request.url.netloc}{request.url.path}"

    def url(extra: list[tuple[str, str]]) -> str:
        return f"{base}?{urlencode([*params, ('perPage', str(per_page)), *extra])}"

    links = [f'<{url([("page", "1")])}>; rel="first"']
    if page < pages:
        links.append(f'<{url([("page", str(page + 1))])}>; rel="next"')
    links.append(f'<{url([])}{{&page}}>; rel="seek"')
    return {"X-Total-Count": str(total), "X-Total-Pages": str(pages), "Link": ", ".join(links)}


def relative_page(
    request: Request, items: Sequence[T], id_of: Callable[[T], object], *, default: int = 50
) -> Page:
    """Items after the ``id`` cursor (exclusive), ``perPage`` of them, with a scheme-less Link."""
    per_page = int_param(request, "perPage", default)
    cursor = request.query_params.get("id")
    start = 0
    if cursor:
        start = next((n + 1 for n, item in enumerate(items) if str(id_of(item)) == cursor), -1)
        if start < 0:
            start = _position_after(items, id_of, cursor)
    chunk = list(items[start : start + per_page])
    more = start + per_page < len(items)
    where = f"{request.url.netloc}{request.url.path}"
    keep = [(k, v) for k, v in request.query_params.multi_items() if k not in ("id", "perPage")]
    links = [f'<{where}?{urlencode([*keep, ("perPage", str(per_page))])}>; rel="first"']
    if more and chunk:
        query = urlencode([*keep, ("id", str(id_of(chunk[-1]))), ("perPage", str(per_page))])
        links.append(f'<{where}?{query}>; rel="next"')
    return Page(chunk, {"Link": ", ".join(links)})


def _position_after(items: Sequence[T], id_of: Callable[[T], object], cursor: str) -> int:
    """For a cursor id that is not (or no longer) listed: the first item with a greater id."""
    for n, item in enumerate(items):
        value = id_of(item)
        if isinstance(value, int) and cursor.isdigit() and value > int(cursor):
            return n
        if isinstance(value, str) and value > cursor:
            return n
    return len(items)
