"""The issue tracker's API (v3): the reads extraction needs and the admin `_import` writes.

Listings are async generators of plain dicts (``scroll_issues`` yields whole pages, so the
caller can commit a page and its checkpoint together). The imports are not idempotent:
an uncertain outcome raises AmbiguousWriteError and is never repeated here.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import structlog

from haul.connectors.errors import (
    HaulHTTPError,
    NotFoundError,
    UnexpectedReply,
    ValidationError,
)
from haul.connectors.http import Sink
from haul.connectors.pagination import (
    PageNumberPaginator,
    Paginator,
    RelativeIdPaginator,
    ScrollPaginator,
    paginate,
)
from haul.connectors.tracker_config import QueueConfigCalls
from haul.connectors.tracker_entities import QUIET, EntityCalls
from haul.connectors.tracker_removals import RemovalCalls
from haul.connectors.tracker_rules import QueueRuleCalls

log = structlog.get_logger("haul.connectors")

Record = dict[str, Any]
WORKLOG_SEARCH_CAP = 10_000  # the most worklog records one search reply holds
FileSource = IO[bytes] | Path


def search_body(query: str | None, filter: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON body of a search or count: a query, a filter, or neither (every issue)."""
    if query is not None and filter is not None:
        raise ValueError("give a query or a filter, not both")
    if query is not None:
        return {"query": query}
    return {"filter": filter} if filter is not None else {}


def _segment(value: str | int) -> str:
    """A path segment, escaped so that a '/' or '?' in a key or file name stays inside it."""
    return quote(str(value), safe="")


class TrackerClient(EntityCalls, QueueConfigCalls, QueueRuleCalls, RemovalCalls):
    """One tracker org, over one HttpCore (closed with the client); the entities' endpoints
    come from `EntityCalls`, the queues' configuration from `QueueConfigCalls`, a queue's
    triggers and macros from `QueueRuleCalls`, the deletions `haul undo` sends from
    `RemovalCalls`."""

    service = "tracker"

    # -- issues ------------------------------------------------------------------------

    async def myself(self) -> Record:
        """The token's own user: the cheap auth probe (AuthError when rejected)."""
        return await self.core.get_json("/myself")

    async def scroll_issues(
        self,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        per_scroll: int = 500,
        ttl_ms: int = 60_000,
        scroll_type: str = "sorted",
        expand: str | None = None,
    ) -> AsyncGenerator[list[Record], None]:
        """Yield every matching issue, a scroll page at a time, past the 10 000 cap.

        ``expand="attachments"`` embeds each issue's attachment refs (and with them the
        checklist and the time spent), so a drain asks only for what an issue has.

        Closed before the end (``aclose()``, a break inside ``aclosing``, an error), it
        releases the scroll on the server. ScrollExpiredError when the scroll is gone.
        """
        paginator = ScrollPaginator(per_scroll=per_scroll, ttl_ms=ttl_ms, scroll_type=scroll_type)
        body = search_body(query, filter)
        try:
            params = {"expand": expand} if expand else None
            pages = paginate(
                self.core, "POST", "/issues/_search", paginator, params=params, json=body
            )
            async for page in pages:
                yield page
        finally:
            if paginator.has_next_page and paginator.scrolls:
                await self._release_scrolls(paginator.scrolls)

    async def _release_scrolls(self, scrolls: dict[str, str]) -> None:
        try:
            await self.clear_scrolls(scrolls)
        except HaulHTTPError as error:
            # the scroll dies with its TTL anyway; the listing's own outcome matters more
            log.warning("scroll_clear_failed", service="tracker", error=str(error))

    async def search_issues(
        self,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        per_page: int = 100,
    ) -> AsyncIterator[Record]:
        """Yield matching issues by page number (the server stops at 10 000; use scroll)."""
        paginator = PageNumberPaginator(per_page=per_page)
        body = search_body(query, filter)
        async for issue in self._records("/issues/_search", paginator, method="POST", json=body):
            yield issue

    async def count_issues(
        self, *, query: str | None = None, filter: dict[str, Any] | None = None
    ) -> int:
        """How many issues match (the reply is a bare integer)."""
        body = search_body(query, filter)
        return int(await self.core.post_json("/issues/_count", json=body, write=False))

    async def get_issue(self, key: str) -> Record:
        """One issue by key; NotFoundError when it does not exist."""
        return await self.core.get_json(f"/issues/{_segment(key)}")

    async def issues_by_keys(self, keys: list[str]) -> list[Record]:
        """The issues of these keys, by one search (`{"keys": [...]}`) of pages of 100; a key
        the target lacks is left out."""
        paginator = PageNumberPaginator(per_page=100)
        body = {"keys": keys}
        pages = self._records("/issues/_search", paginator, method="POST", json=body)
        return [issue async for issue in pages]

    async def find_issue(self, key: str) -> Record | None:
        """One issue by key, or None when it does not exist."""
        try:
            return await self.get_issue(key)
        except NotFoundError:
            return None

    async def find_by_unique(self, unique: str) -> Record | None:
        """The issue created with this ``unique`` value, or None."""
        try:
            return await self.core.post_json(
                "/issues/_findByUnique", params={"unique": unique}, write=False
            )
        except NotFoundError:
            return None

    async def clear_scrolls(self, scrolls: dict[str, str]) -> None:
        """Release scrolls on the server: a map of each scrollId to its scrollToken."""
        # releasing twice is harmless, so it may be retried like a read
        await self.core.request("POST", "/system/search/scroll/_clear", json=scrolls, write=False)

    # -- sub-records of an issue -------------------------------------------------------

    def iter_comments(
        self, key: str, *, per_page: int = 100, expand: str | None = "attachments"
    ) -> AsyncIterator[Record]:
        """Yield an issue's comments, oldest first (with their attachment refs by default)."""
        params: dict[str, Any] = {"perPage": per_page}
        if expand:
            params["expand"] = expand
        path = f"/issues/{_segment(key)}/comments"
        return self._records(path, RelativeIdPaginator(), params=params)

    def iter_worklogs(self, key: str, *, per_page: int = 100) -> AsyncIterator[Record]:
        """Yield an issue's worklog records (read path is singular: ``/worklog``)."""
        path = f"/issues/{_segment(key)}/worklog"
        return self._records(path, RelativeIdPaginator(), params={"perPage": per_page})

    def iter_changelog(
        self, key: str, *, per_page: int = 100, after: str | None = None
    ) -> AsyncIterator[Record]:
        """Yield an issue's change history, oldest first; only the entries after the entry id
        `after` when given (the listing's own cursor: a later run resumes there)."""
        path = f"/issues/{_segment(key)}/changelog"
        params: dict[str, Any] = {"perPage": per_page}
        if after is not None:
            params["id"] = after
        return self._records(path, RelativeIdPaginator(), params=params)

    async def list_links(self, key: str) -> list[Record]:
        """An issue's links, each as seen from this issue (``direction``, ``object``)."""
        return await self._list(f"/issues/{_segment(key)}/links", "links")

    async def search_worklogs(self, created_from: str, created_to: str) -> list[Record] | None:
        """The organisation's worklog records created in a window (bounds inclusive, as
        ``YYYY-MM-DDThh:mm:ss.sss``), oldest first; None when the window holds more than one
        reply may (the service refuses beyond 10 000: narrow the window)."""
        body = {"createdAt": {"from": created_from, "to": created_to}}
        try:
            reply = await self.core.post_json("/worklog/_search", json=body, write=False)
        except ValidationError as error:
            if "exceeds" in f"{error.server_message} {error.message}":
                return None
            raise
        if not isinstance(reply, list):
            raise UnexpectedReply(
                f"tracker POST /worklog/_search: expected a list, got {str(reply)[:200]}",
                service="tracker",
                method="POST",
                url="/worklog/_search",
            )
        if len(reply) >= WORKLOG_SEARCH_CAP:  # a service that cuts the reply short instead
            return None
        return [record for record in reply if isinstance(record, dict)]

    async def list_attachments(self, key: str) -> list[Record]:
        """An issue's attachments, those of its comments included."""
        return await self._list(f"/issues/{_segment(key)}/attachments", "attachments")

    async def list_checklist(self, key: str) -> list[Record]:
        """An issue's checklist items (empty when it has none)."""
        return await self._list(f"/issues/{_segment(key)}/checklistItems", "checklist items")

    async def download_attachment(
        self, key: str, attachment_id: str | int, filename: str, sink: Sink
    ) -> int:
        """Stream an attachment's bytes into ``sink``; return how many were written.

        Never holds the file in memory. A failure once bytes were written raises
        TransientError: restart with a fresh sink.
        """
        path = f"/issues/{_segment(key)}/attachments/{_segment(attachment_id)}/{_segment(filename)}"
        return await self.core.download(path, sink)

    # -- dictionaries, queues, users ---------------------------------------------------

    async def list_statuses(self) -> list[Record]:
        """The org's statuses (map by ``key``: ids differ between orgs)."""
        return await self.core.get_json("/statuses")

    async def list_issue_types(self) -> list[Record]:
        """The org's issue types."""
        return await self.core.get_json("/issuetypes")

    async def list_priorities(self) -> list[Record]:
        """The org's priorities."""
        return await self.core.get_json("/priorities")

    async def list_resolutions(self) -> list[Record]:
        """The org's resolutions."""
        return await self.core.get_json("/resolutions")

    async def list_link_types(self) -> list[Record]:
        """The link types (``id``, ``inward``, ``outward``)."""
        return await self.core.get_json("/linktypes")

    async def list_dictionary(self, path: str) -> list[Record]:
        """One dictionary by its path: statuses, issuetypes, priorities or resolutions."""
        return await self._list(f"/{_segment(path)}", path)

    async def list_fields(self) -> list[Record]:
        """The org's global fields."""
        return await self.core.get_json("/fields")

    def iter_queues(self, *, per_page: int = 50) -> AsyncIterator[Record]:
        """Yield every queue."""
        return self._records("/queues", PageNumberPaginator(per_page=per_page))

    async def get_queue(self, key: str, *, expand: str | None = None) -> Record:
        """One queue by key (``expand`` e.g. "all" adds types, workflows, versions)."""
        params = {"expand": expand} if expand else None
        return await self.core.get_json(f"/queues/{_segment(key)}", params=params)

    async def get_queue_permissions(self, queue: str, kind: str, holder: str) -> Record:
        """What one holder may do in the queue: `kind` "users" (a login or uid) or "groups"
        (a group id). ``{"permissions": {CODE: {"users": [...], "groups": [...]}}, ...}``:
        each code held (READ, CREATE, WRITE, GRANT) with what it is held through."""
        path = f"/queues/{_segment(queue)}/permissions/{_segment(kind)}/{_segment(holder)}"
        return await self.core.get_json(path)

    def iter_users(self, *, per_page: int = 100) -> AsyncIterator[Record]:
        """Yield every user (the reply is ``{"users": [...], "hasNext": bool}``)."""
        paginator = PageNumberPaginator(per_page=per_page, records_key="users")
        return self._records("/users", paginator)

    # -- the organisation's structure (admin writes are not idempotent) ----------------

    async def list_queue_components(self, queue: str) -> list[Record]:
        """A queue's components (name, description, lead, assignAuto)."""
        return await self._list(f"/queues/{_segment(queue)}/components", "components")

    async def list_queue_versions(self, queue: str) -> list[Record]:
        """A queue's versions (name, description, startDate, dueDate, released, archived)."""
        return await self._list(f"/queues/{_segment(queue)}/versions", "versions")

    async def list_local_fields(self, queue: str) -> list[Record]:
        """A queue's local fields (their ``key`` is the one issues of the queue use)."""
        return await self._list(f"/queues/{_segment(queue)}/localFields", "local fields")

    async def list_field_categories(self) -> list[Record]:
        """The org's field categories."""
        return await self._list("/fields/categories", "field categories")

    async def list_boards(self) -> list[Record]:
        """The org's boards."""
        return await self._list("/boards", "boards")

    async def list_board_columns(self, board: str | int) -> list[Record]:
        """A board's columns, each with its statuses."""
        return await self._list(f"/boards/{_segment(board)}/columns", "board columns")

    async def list_board_sprints(self, board: str | int) -> list[Record]:
        """A board's sprints."""
        return await self._list(f"/boards/{_segment(board)}/sprints", "sprints")

    async def create_dictionary_value(self, kind: str, body: Record) -> Record:
        """POST /statuses, /issuetypes, /priorities or /resolutions (key, name, order; a
        status's type)."""
        return await self.core.post_json(f"/{_segment(kind)}", json=body)

    async def create_queue(self, body: Record) -> Record:
        """POST /queues (key, name, lead, defaultType, defaultPriority, issueTypesConfig)."""
        return await self.core.post_json("/queues", json=body)

    async def create_component(self, body: Record) -> Record:
        """POST /components (name, queue, description, lead, assignAuto)."""
        return await self.core.post_json("/components", json=body)

    async def create_version(self, body: Record) -> Record:
        """POST /versions (queue, name, description, startDate, dueDate, released)."""
        return await self.core.post_json("/versions", json=body)

    async def update_version(self, version_id: str | int, version: int, body: Record) -> Record:
        """PATCH /versions/{id} under its version lock (released, archived, ...): what the
        creation does not take. Repeatable: a second send leaves it as the first."""
        return await self.core.request_json(
            "PATCH", f"/versions/{_segment(version_id)}", params={"version": version},
            json=body, repeatable=True,
        )  # fmt: skip

    async def create_field_category(self, body: Record) -> Record:
        """POST /fields/categories (name, order, description)."""
        return await self.core.post_json("/fields/categories", json=body)

    async def create_field(self, body: Record) -> Record:
        """POST /fields: a global field (id, name, category, type, optionsProvider)."""
        return await self.core.post_json("/fields", json=body)

    async def create_local_field(self, queue: str, body: Record) -> Record:
        """POST /queues/{queue}/localFields (id, name, category, type, optionsProvider)."""
        return await self.core.post_json(f"/queues/{_segment(queue)}/localFields", json=body)

    async def create_board(self, body: Record) -> Record:
        """POST /boards (name, defaultQueue, useRanking)."""
        return await self.core.post_json("/boards", json=body)

    async def create_board_column(self, board: str | int, body: Record) -> Record:
        """POST /boards/{id}/columns (name, statuses by key)."""
        return await self.core.post_json(f"/boards/{_segment(board)}/columns", json=body)

    async def create_sprint(self, body: Record) -> Record:
        """POST /sprints (name, board, startDate, endDate, status)."""
        return await self.core.post_json("/sprints", json=body)

    # -- admin imports (not idempotent) ------------------------------------------------

    async def import_issue(self, body: Record) -> Record:
        """Create an issue with its original dates, authors and key (201)."""
        return await self.core.post_json("/issues/_import", json=body)

    async def import_comment(self, key: str, body: Record) -> Record:
        """Create a comment with its original date and author (201)."""
        return await self.core.post_json(f"/issues/{_segment(key)}/comments/_import", json=body)

    async def import_worklog(self, key: str, body: Record) -> list[Record]:
        """Create a worklog record; the reply is an array of the created record(s) (200)."""
        reply = await self.core.post_json(f"/issues/{_segment(key)}/worklogs/_import", json=body)
        return reply if isinstance(reply, list) else [reply]

    async def import_link(self, key: str, body: Record) -> Record:
        """Create a link from this issue (``relationship``, ``issue``, dates) (201)."""
        return await self.core.post_json(f"/issues/{_segment(key)}/links/_import", json=body)

    async def import_attachment(
        self,
        key: str,
        *,
        filename: str,
        created_at: str,
        created_by: str | int,
        source: FileSource,
    ) -> Record:
        """Upload a file to an issue with its original date and author, streamed from disk."""
        path = f"/issues/{_segment(key)}/attachments/_import"
        return await self._upload(path, filename, created_at, created_by, source)

    async def import_comment_attachment(
        self,
        key: str,
        comment_id: str | int,
        *,
        filename: str,
        created_at: str,
        created_by: str | int,
        source: FileSource,
    ) -> Record:
        """Upload a file to a comment (the reply carries ``commentId``)."""
        path = f"/issues/{_segment(key)}/comments/{_segment(comment_id)}/attachments/_import"
        return await self._upload(path, filename, created_at, created_by, source)

    async def update_issue(self, key: str, body: Record, *, version: int | None = None) -> Record:
        """PATCH /issues/{key}: only the fields sent change. A write, but repeatable: retried
        after a lost reply like a read. With `version` (the issue's, as read), applied only to
        that version: ConflictError (409) once the issue moved on."""
        params = {"version": version} if version is not None else None
        return await self.core.request_json(
            "PATCH", f"/issues/{_segment(key)}", params=params, json=body, repeatable=True
        )

    async def add_checklist_items(self, key: str, items: list[Record]) -> Record:
        """Append checklist items; the reply is the issue with its ``checklistItems``."""
        return await self.core.post_json(f"/issues/{_segment(key)}/checklistItems", json=items)

    async def update_checklist_item(self, key: str, item_id: str, body: Record) -> Record:
        """PATCH one checklist item (text, checked, ...). A write, but repeatable: the same
        edit twice leaves the item as once."""
        path = f"/issues/{_segment(key)}/checklistItems/{_segment(item_id)}"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)

    # -- ordinary edits: what a sync replays -------------------------------------------

    async def list_transitions(self, key: str) -> list[Record]:
        """The transitions the issue may execute from its status (``id``, ``to``)."""
        return await self._list(f"/issues/{_segment(key)}/transitions", "transitions")

    async def execute_transition(
        self, key: str, transition: str, body: Record | None = None
    ) -> list[Record]:
        """Move the issue along one transition (``body`` may set a resolution); the reply
        lists the transitions available from the new status. Not repeatable: after a lost
        reply the issue's status tells whether it was applied."""
        path = f"/issues/{_segment(key)}/transitions/{_segment(transition)}/_execute"
        reply = await self.core.post_json(path, json=body or {})
        return reply if isinstance(reply, list) else []

    async def list_queue_workflows(self, queue: str) -> list[Record]:
        """The workflows of a queue, each with its statuses and the transitions between
        them (``id``, ``to``, ``from``), so a path can be planned before any step."""
        return await self._list(f"/queues/{_segment(queue)}/workflows", "workflows")

    async def update_comment(self, key: str, comment_id: str | int, body: Record) -> Record:
        """PATCH a comment's text (repeatable)."""
        path = f"/issues/{_segment(key)}/comments/{_segment(comment_id)}"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)

    async def update_worklog(self, key: str, worklog_id: str | int, body: Record) -> Record:
        """PATCH a worklog record's duration, start or comment (repeatable)."""
        path = f"/issues/{_segment(key)}/worklog/{_segment(worklog_id)}"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)

    async def delete_record(self, key: str, kind: str, record_id: str | int) -> bool:
        """DELETE one of an issue's ``comments``, ``worklog``, ``links``, ``attachments``,
        ``checklistItems`` or ``remotelinks``;
        False when it was gone already (so a repeat after a lost reply is harmless)."""
        path = f"/issues/{_segment(key)}/{kind}/{_segment(record_id)}"
        try:
            await self.core.delete(path, repeatable=True)
        except NotFoundError:
            return False
        return True

    async def move_issue(self, key: str, queue: str) -> Record:
        """POST /issues/{key}/_move?queue=: the issue under its new key (the old key still
        finds it). Not repeatable: after a lost reply the issue's queue tells. Quiet: the move
        asks the service to notify no one (the spec lets this call say so)."""
        return await self.core.post_json(
            f"/issues/{_segment(key)}/_move", params=QUIET | {"queue": queue}
        )

    # -- saved filters, dashboards, remote links, autoactions ---------------------------

    async def list_filters(self) -> list[Record]:
        """The org's saved filters (name, owner, query and/or filter conditions)."""
        return await self._list("/filters", "filters")

    async def create_filter(self, body: Record) -> Record:
        """POST /filters (name; query and/or filter): the creator becomes its owner."""
        return await self.core.post_json("/filters", json=body)

    async def update_filter(self, filter_id: str | int, body: Record) -> Record:
        """PATCH /filters/{id} (no version lock): only the fields sent change (repeatable)."""
        path = f"/filters/{_segment(filter_id)}"
        return await self.core.request_json("PATCH", path, json=body, repeatable=True)

    async def list_dashboards(self) -> list[Record]:
        """The org's dashboards (the sandbox's listing: the spec shows none, so a service
        without one answers 404 and the caller says dashboards cannot be listed)."""
        return await self._list("/dashboards", "dashboards")

    async def list_dashboard_widgets(self, dashboard: str | int) -> list[Record]:
        """A dashboard's widgets (cycle time: description, query, from/to statuses, mode)."""
        return await self._list(f"/dashboards/{_segment(dashboard)}/widgets", "widgets")

    async def create_dashboard(self, body: Record) -> Record:
        """POST /dashboards (name, layout, owner)."""
        return await self.core.post_json("/dashboards", json=body)

    async def create_cycle_time_widget(self, dashboard: str | int, body: Record) -> Record:
        """POST /dashboards/{id}/widgets/cycleTime (description, query, statuses, mode)."""
        path = f"/dashboards/{_segment(dashboard)}/widgets/cycleTime"
        return await self.core.post_json(path, json=body)

    async def list_applications(self) -> list[Record]:
        """The external applications issues may link to (a remote link's ``origin``)."""
        return await self._list("/applications", "applications")

    async def list_remote_links(self, key: str) -> list[Record]:
        """An issue's remote links (``object``: the application and the key in it)."""
        return await self._list(f"/issues/{_segment(key)}/remotelinks", "remote links")

    async def create_remote_link(self, key: str, body: Record) -> Record:
        """POST /issues/{key}/remotelinks (key, origin, relationship) (201)."""
        return await self.core.post_json(f"/issues/{_segment(key)}/remotelinks", json=body)

    async def list_autoactions(self, queue: str) -> list[Record]:
        """A queue's autoactions (name, actions, query or filter, interval, active)."""
        return await self._list(f"/queues/{_segment(queue)}/autoactions", "autoactions")

    async def get_autoaction(self, queue: str, action_id: str | int) -> Record:
        """One autoaction of a queue, with its ``version`` (an edit's lock)."""
        path = f"/queues/{_segment(queue)}/autoactions/{_segment(action_id)}"
        return await self.core.get_json(path)

    async def update_autoaction(
        self, queue: str, action_id: str | int, version: int, body: Record
    ) -> Record:
        """PATCH an autoaction's settings under its version lock (the official SDK's update;
        the spec shows only its creation). Repeatable: a second send of the same settings
        leaves it as the first, and a stale version is refused, not applied."""
        path = f"/queues/{_segment(queue)}/autoactions/{_segment(action_id)}"
        return await self.core.request_json(
            "PATCH", path, params={"version": version}, json=body, repeatable=True
        )

    async def create_autoaction(self, queue: str, body: Record) -> Record:
        """POST /queues/{queue}/autoactions (name, actions, query or filter, ...)."""
        return await self.core.post_json(f"/queues/{_segment(queue)}/autoactions", json=body)

    # -- helpers -----------------------------------------------------------------------

    async def _records(
        self,
        path: str,
        paginator: Paginator,
        *,
        method: str = "GET",
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> AsyncIterator[Record]:
        pages = paginate(self.core, method, path, paginator, params=params, json=json)
        async for page in pages:
            for record in page:
                yield record

    async def _upload(
        self, path: str, filename: str, created_at: str, created_by: str | int, source: FileSource
    ) -> Record:
        params = {"filename": filename, "createdAt": created_at, "createdBy": created_by}
        with _opened(source) as stream:
            # httpx reads a file object in chunks while sending, and rewinds it on a retry
            return await self.core.request_json(
                "POST", path, params=params, files={"file": (filename, stream)}
            )


@contextmanager
def _opened(source: FileSource) -> Iterator[IO[bytes]]:
    """The source as a binary file: a Path is opened (and closed), a file object is lent."""
    if isinstance(source, Path):
        with source.open("rb") as stream:
            yield stream
    else:
        yield source
