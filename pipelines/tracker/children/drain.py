"""The tracker's issue drain: an issue's comments, worklogs, changelog, links, remote links,
attachments (bytes into the blob store, checked against their listed size), checklist, and the
status it holds, as a record of its own (`issue_status`: a sync carries a new one through the target's
workflow, see `issues.statuses`).

It asks only for what the issue says it has (`listings_needed`): the service already told the
comment counters, the time spent, the attachments (with ``expand=attachments``) and the
checklist; what stays uncertain is always asked. Nothing on an issue tells whether it has
remote links, but a remote link points into one of the org's applications (its ``origin``):
the drain lists the source's applications once (`Applications`) and, when there are none,
asks no issue for remote links. Should the org's applications not be readable, every issue
is asked, as before: a listing too many costs a request, one too few loses links.

A first migration reads less still: links only for the issues a query says have some
(`link_survey`), worklogs from the organisation-wide search by window (`worklog_bulk`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import structlog

from haul.connectors.errors import RecordError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.concurrency import gather_all
from haul.pipelines.downloads import download_checked, staged_or_fetched
from haul.pipelines.streams import Row, child_rows
from haul.pipelines.tracker.children.link_survey import LinkSurvey
from haul.pipelines.tracker.children.replaced import REPLACED, replaced_files
from haul.pipelines.tracker.children.since_drain import EarlierDrain, listings_to_skip
from haul.pipelines.tracker.children.worklog_bulk import BulkWorklogs
from haul.pipelines.tracker.issues.statuses import status_row
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

PER_PAGE = 100  # the client's page size for the paged listings (comments, worklogs, changelog)


@dataclass
class Applications:
    """Whether the source org has any application a remote link could point into, asked
    once per run however many issues wait (None: unknown, the listing was refused)."""

    client: TrackerClient
    _any: bool | None = None
    _asked: bool = False
    _asking: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def any(self) -> bool | None:
        async with self._asking:
            if not self._asked:
                self._any = await self._ask()
                self._asked = True
        return self._any

    async def _ask(self) -> bool | None:
        try:
            found = await self.client.list_applications()
        except RecordError as exc:  # not this org's to list: ask every issue, lose nothing
            log.warning("applications_unlisted", error=str(exc))
            return None
        log.info("applications_listed", applications=len(found))
        return bool(found)


@dataclass
class IssueDrain:
    """An issue's sub-records, fetched together; attachment bytes go to the blob store."""

    client: TrackerClient
    store: StagingStore
    concurrent: bool = True
    attachment_bytes: int = 0
    parent: str = "issue"
    counts: dict[str, int] = field(default_factory=dict)
    changelog: bool = True  # [scope] changelog
    applications: Applications | None = None  # None: the client's, asked on the first issue
    link_survey: LinkSurvey | None = None  # a first migration's links by query
    bulk_worklogs: BulkWorklogs | None = None  # a first migration's worklogs by window
    listing_requests: int = 0  # the requests of the listings asked, for the run's report

    def __post_init__(self) -> None:
        if self.applications is None:
            self.applications = Applications(self.client)

    async def fetch(self, issue: StagedRecord) -> dict[str, list[Row]]:
        """Ask only for what the issue says it has (see `listings_needed`), and, where an
        earlier drain staged it, only for what changed since (`since_drain`)."""
        key = issue.source_id
        assert self.applications is not None  # set in __post_init__
        remote_links = await self.applications.any() is not False
        needed = listings_needed(issue.raw, changelog=self.changelog, remote_links=remote_links)
        earlier = EarlierDrain.read(self.store, key)
        resumed = await self._new_changes(key, earlier, issue.updated_at)
        skipped = listings_to_skip(
            issue.raw, earlier, updated_at=issue.updated_at, new_entries=resumed
        )
        listings: dict[str, Callable[[], Awaitable[list[dict[str, Any]]]]] = {
            "comment": lambda: self._collect(self.client.iter_comments(key)),
            "worklog": lambda: self._worklogs(issue.raw, key),
            "changelog": lambda: self._collect(self.client.iter_changelog(key)),
            "link": lambda: self._links(issue.raw, key),
            "attachment": lambda: self._listed(self.client.list_attachments(key)),
            "remote_link": lambda: self._listed(self.client.list_remote_links(key)),
        }
        # what the issue calls for but did not change since the earlier drain stays as staged
        kept = {entity for entity in needed if entity in skipped}
        if resumed is not None and self.changelog:  # read already, from the earlier drain's
            kept.add("changelog")
        asked = {entity: listings[entity] for entity in needed if entity not in kept}
        embedded = embedded_attachments(issue.raw)
        # the embedded attachments' bytes come beside the listings; listed ones after them
        early = self.concurrent and embedded is not None
        downloading = (
            asyncio.ensure_future(self._fetch_blobs(key, embedded or [])) if early else None
        )
        try:
            replies = await gather_all([listing() for listing in asked.values()], self.concurrent)
            results = dict(zip(asked, replies, strict=True))
            attachments = embedded if embedded is not None else results.get("attachment", [])
            fetching = downloading or self._fetch_blobs(key, attachments)
            blobs, problems = await fetching
        finally:  # a listing that failed ends the issue's downloads too
            if downloading is not None:
                downloading.cancel()
                await asyncio.gather(downloading, return_exceptions=True)
        children = {
            "comment": child_rows(key, results.get("comment", [])),
            "worklog": child_rows(key, results.get("worklog", [])),
            "link": child_rows(key, results.get("link", [])),
            "remote_link": child_rows(key, results.get("remote_link", [])),
            "attachment": child_rows(key, attachments, blobs, problems),
            "checklist": _checklist_rows(key, checklist_of(issue.raw), self._had_checklist(key)),
            "issue_status": [row] if (row := status_row(key, issue.raw)) else [],
        }
        # a file uploaded again under its name, seen while the old one is still staged
        children[REPLACED] = replaced_files(self.store, key, children["attachment"])
        if self.changelog:  # else what an earlier extract staged stays as it was
            entries = results.get("changelog", [])
            if resumed is not None:
                entries = earlier.settled_changelog(earlier.resume_after()) + resumed
            children["changelog"] = child_rows(key, entries)
        for entity in kept - {"changelog"}:
            del children[entity]
        if "attachment" in kept:
            del children[REPLACED]
        return children

    async def _links(self, raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
        if self.link_survey is not None:
            return await self.link_survey.links_of({"key": key, **raw})
        return await self._listed(self.client.list_links(key))

    async def _worklogs(self, raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
        if self.bulk_worklogs is not None:
            found = await self.bulk_worklogs.worklogs_of({"key": key, **raw})
            if found is not None:
                return found
        return await self._collect(self.client.iter_worklogs(key))

    async def _new_changes(
        self, key: str, earlier: EarlierDrain, updated_at: str | None
    ) -> list[dict[str, Any]] | None:
        """The changelog's entries since the earlier drain: where it is staged, listed from
        the last entry staged; else, for an issue that changed, the newer part of the whole.
        None when there is no earlier drain to compare with (every listing is asked)."""
        if self.changelog:
            after = earlier.resume_after()
            if after is None:
                return None
            return await self._collect(self.client.iter_changelog(key, after=after))
        if not earlier.moved(updated_at):
            return None
        return earlier.newer(await self._collect(self.client.iter_changelog(key)))

    async def _collect(self, listing: Any) -> list[dict[str, Any]]:
        """A paged listing's records; its requests counted (a page per `PER_PAGE`)."""
        records = [item async for item in listing]
        self.listing_requests += max(1, -(-len(records) // PER_PAGE))
        return records

    async def _listed(self, listing: Awaitable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        self.listing_requests += 1
        return await listing

    def _had_checklist(self, key: str) -> bool:
        return self.store.get_record("checklist", f"{key}/checklist") is not None

    async def _fetch_blobs(
        self, key: str, attachments: list[dict[str, Any]]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Download each attachment not staged yet (same id, same size, bytes intact).

        Returns id -> sha256 of the staged bytes, and id -> problem for those whose bytes
        could not be had whole.
        """
        blobs: dict[str, str] = {}
        problems: dict[str, str] = {}

        async def fetch(attachment: dict[str, Any]) -> None:
            name = str(attachment["id"])
            blob, problem = await staged_or_fetched(
                self.store,
                "attachment",
                f"{key}/{name}",
                attachment.get("size"),
                partial(self._download, key, attachment),
            )
            if blob is not None:
                blobs[name] = blob
            if problem is not None:
                problems[name] = problem

        await gather_all([fetch(attachment) for attachment in attachments], self.concurrent)
        return blobs, problems

    async def _download(self, key: str, attachment: dict[str, Any]) -> str:
        """The attachment's bytes into the blob store, checked against the listed size."""
        expected = attachment.get("size")
        sha256, size = await download_checked(
            self.store.blobs,
            lambda sink: self.client.download_attachment(
                key, attachment["id"], attachment["name"], sink
            ),
            name=f"{key}/{attachment['name']}",
            expected=int(expected) if expected is not None else None,
        )
        self.attachment_bytes += size
        return sha256


def listings_needed(
    issue: dict[str, Any], *, changelog: bool = True, remote_links: bool = True
) -> list[str]:
    """The listings an issue needs, from what the service already told about it.

    Links always, remote links unless the org has no application for one to point into, and
    the changelog unless it is not wanted (nothing on the issue counts any of them). Comments unless both comment counters say zero; worklogs only when time was
    spent; attachments only when the issue does not carry them with their metadata
    (``expand=attachments``). The checklist arrives inside the issue (`checklistItems`) and
    needs no request at all.
    """
    needed = ["changelog", "link"] if changelog else ["link"]
    if remote_links:
        needed.append("remote_link")
    counters = [issue.get(name) for name in COMMENT_COUNTERS]
    if any(count is None or count for count in counters):
        needed.append("comment")
    if issue.get("spent"):
        needed.append("worklog")
    if embedded_attachments(issue) is None:
        needed.append("attachment")
    return needed


def embedded_attachments(issue: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The attachments embedded in the issue with their metadata (``expand=attachments``),
    or None when they are not all there (bare refs without a size: list them)."""
    embedded = issue.get("attachments")
    if not isinstance(embedded, list):
        return None
    if all(isinstance(a, dict) and {"id", "name", "size"} <= a.keys() for a in embedded):
        return [{k: v for k, v in a.items() if k != "display"} for a in embedded]
    return None


def checklist_of(issue: dict[str, Any]) -> list[dict[str, Any]]:
    """The checklist the issue carries (empty when it has none)."""
    items = issue.get("checklistItems")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


COMMENT_COUNTERS = ("commentWithoutExternalMessageCount", "commentWithExternalMessageCount")


def _checklist_rows(parent: str, items: list[dict[str, Any]], had: bool = False) -> list[Row]:
    """An issue's checklist is one record: its order matters and it loads in one request.
    One emptied at the source (`had` one staged) stays staged, empty, so the sync clears it."""
    if not items and not had:
        return []
    return [
        {
            "source_id": f"{parent}/checklist",
            "parent": parent,
            "updated_at": None,
            "raw": {"items": items},
        }
    ]
