"""What `haul check` and `haul plan` say of wiki page access before anything is written.

Both name each page that would fail closed (a holder that maps to no target user or group)
with the holders that make it: `haul check` as one warning per holder with the pages it
restricts, `haul plan` as a conflict on the page's `wiki_page_access` row (the load writes it
restricted to its owner and the migrating admin, and fails the row). `haul plan` also names
each page whose target slug is taken by a page haul did not make (`pipelines.wiki.ownership`)
as a conflict. Everything else it decides as the specs' own `find` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from haul.pipelines.findings import Finding, nothing_staged
from haul.pipelines.planner import Decision, SpecPlanner
from haul.pipelines.specs import EntitySpec
from haul.pipelines.wiki.access import staged_with_access
from haul.pipelines.wiki.access_sync import PageAccess
from haul.pipelines.wiki.load import WikiLoad
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

SHOWN = 5  # pages named per holder; the rest are counted
FIX = "map it in mapping.users_file (users) or mapping.groups_file (groups), then check again"


def restricted_pages(store: StagingStore, access: PageAccess) -> tuple[dict[str, list[str]], int]:
    """Holder -> the staged pages it would leave restricted; and how many pages were staged
    without their access."""
    by_holder: dict[str, list[str]] = {}
    unknown = 0
    for record in store.iter_records("wiki_page"):
        if not staged_with_access(record.raw):
            unknown += 1
            continue
        for holder in access.wanted(record).unmapped:
            by_holder.setdefault(holder, []).append(record.source_id)
    return by_holder, unknown


def access_findings(store: StagingStore, access: PageAccess) -> list[Finding]:
    """`haul check`'s findings on the target: the holders that map to no one, and the gaps."""
    if not store.count_records().get("wiki_page"):
        return [nothing_staged("the wiki's page access")]
    by_holder, unknown = restricted_pages(store, access)
    findings = []
    if not access.holders.directory.lists_groups:
        findings.append(Finding(
            "warning",
            "the target wiki lists no groups: a group maps only to an id mapping.groups_file"
            " gives (source group,dir:<id>)",
            "give each group of the source's page access a target id in mapping.groups_file",
        ))  # fmt: skip
    if unknown:
        findings.append(Finding(
            "warning",
            f"{unknown} wiki pages were staged without their access: their load fails",
            "run haul extract",
        ))  # fmt: skip
    for holder, pages in sorted(by_holder.items()):
        named = ", ".join(sorted(pages)[:SHOWN])
        more = f" and {len(pages) - SHOWN} more" if len(pages) > SHOWN else ""
        findings.append(Finding(
            "warning",
            f"wiki page access: {holder} maps to no target holder: {len(pages)} page(s) will be"
            f" restricted to their owner and the migrating admin ({named}{more})",
            FIX,
        ))  # fmt: skip
    if not by_holder and not unknown:
        findings.append(Finding("ok", "wiki page access: every holder maps to the target"))
    return findings


@dataclass
class WikiPlanner:
    """`haul plan` for the wiki: a page that fails closed is a conflict, naming its holders;
    so is a page whose slug another page holds in the target, naming it."""

    store: StagingStore
    specs: dict[str, EntitySpec]
    access: PageAccess
    load: WikiLoad

    async def decide(self, row: LedgerRow, record: StagedRecord) -> Decision:
        """conflict for a page access row that fails closed, or a page whose slug is taken;
        else as the specs' `find`."""
        access_row = row.entity == "wiki_page_access" and staged_with_access(record.raw)
        if access_row and (unmapped := self.access.wanted(record).unmapped):
            return "conflict", (
                f"{', '.join(unmapped)} maps to no target holder: the page would be"
                " restricted to its owner and the migrating admin"
            )
        if row.entity == "wiki_page":
            return await self._page(record)
        return await SpecPlanner(self.store, self.specs).decide(row, record)

    async def _page(self, record: StagedRecord) -> Decision:
        """skip a page haul made at its slug, conflict over one it did not, else create."""
        slug = self.load.target_slug(record.source_id)
        there = await self.load.client.find_page(slug)
        if there is None:
            return "create", ""
        if self.load.ownership.ours(there, record.source_id):
            return "skip", f"the target holds it as {there['id']} (made by haul)"
        return "conflict", self.load.ownership.taken(slug, there)
