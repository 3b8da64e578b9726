"""Bringing a target page's access, then its content, to what the source says, never wider.

At every instant of a load each target page is read by no one the source refused it to: a page
whose access is custom is made custom and empty (only the migrating admin reads it), its
entries are granted, and only then is its content written; any other page is made under a
parent whose access is already in place (its `wiki_page_access` row loads before the pages
under it), or open to all staff as at the source. `PageAccess.sync` moves a page from what it
holds to what it should hold, narrowing before widening: a policy that turns custom first, then
entries revoked and changed, then granted, then the policy that opens it and the content last.
It reads the page again after a write it cannot be sure of (a lost reply, a grant that was
there already), so it can be repeated at any point: that is how a crash resumes.

The target's holders come from its `/me`, its group list where the service serves one (the
sandbox's ``/_sandbox/groups``, whose members also give user ids by login) and the users the
tracker staged from the same target org (`target.user`), when the config moves the tracker too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from haul.connectors.errors import AmbiguousWriteError, ConflictError
from haul.connectors.wiki import WikiClient
from haul.pipelines.config.mapping_files import read_groups_csv, read_users_csv
from haul.pipelines.specs import RecordFailure
from haul.pipelines.wiki.access import (
    Access,
    Directory,
    Grant,
    Holder,
    HolderMap,
    current,
    staged_with_access,
    wanted,
)
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

ROUNDS = 4  # passes of read-then-write before a page whose access will not settle fails
TARGET_USERS = "target.user"  # the tracker stages the target org's users (login, uid) here


async def holder_map(
    client: WikiClient,
    store: StagingStore,
    users_file: Path | None,
    groups_file: Path | None,
) -> HolderMap:
    """The target's holders (two reads: `/me` and the group list) and the mapping files; a
    user the target lists as dismissed is no holder (the wiki refuses them access)."""
    staged = [r.raw for r in store.iter_records(TARGET_USERS) if r.raw.get("login")]
    users = {str(u["login"]): str(u["uid"]) for u in staged if u.get("uid")}
    left = [str(u["login"]) for u in staged if u.get("dismissed")]
    directory = Directory.of(await client.me(), await client.groups(), users, left)
    return HolderMap(
        directory,
        read_users_csv(users_file) if users_file else {},
        read_groups_csv(groups_file) if groups_file else {},
    )


@dataclass
class PageAccess:
    """Page access against one target org."""

    client: WikiClient
    holders: HolderMap
    roots: Callable[[StagedRecord], bool]  # whether the page's parent stays behind

    def wanted(self, record: StagedRecord) -> Access:
        """The page's target access; a page staged without it cannot be made safely."""
        if not staged_with_access(record.raw):
            raise RecordFailure(
                f"page {record.source_id} was staged without its access: run haul extract"
            )
        return wanted(record.raw, self.holders, root=self.roots(record))

    async def sync(self, page_id: int, access: Access, *, content: str, title: str) -> None:
        """Bring the page to `access`, then to `content` and `title`; see the module docstring."""
        for _ in range(ROUNDS):
            reply = await self.client.get_access(page_id)
            if self.settled(reply, access, content=content, title=title):
                return
            try:
                await self._converge(page_id, reply, access, content=content, title=title)
            except (AmbiguousWriteError, ConflictError) as exc:  # read again, and go on from there
                log.warning("page_access_uncertain", page=page_id, error=str(exc))
        raise RecordFailure(f"page {page_id}: its access did not settle after {ROUNDS} passes")

    def settled(self, reply: dict[str, Any], access: Access, *, content: str, title: str) -> bool:
        """Whether a target page (read with `get_access`) holds `access`, content and title."""
        now, _ = current(reply, self.holders)
        same_body = reply.get("content") == content and reply.get("title") == title
        return same_body and now.same_policy(access) and now.grants == access.grants

    async def _converge(
        self, page_id: int, reply: dict[str, Any], access: Access, *, content: str, title: str
    ) -> None:
        now, entries = current(reply, self.holders)
        if access.restricted and not now.restricted:  # only its entries read it: narrow first
            await self.client.replace_page(
                page_id, content=str(reply.get("content") or ""), access_policy=access.explicit()
            )
            now = Access("custom", None, now.grants)
        wanted_by_holder = {grant.holder: grant for grant in access.grants}
        for entry in entries:
            want = wanted_by_holder.get(entry.grant.holder)
            if want is None:
                await self.client.revoke_access(page_id, entry.access_id)
            elif want != entry.grant:
                await self.client.change_access(
                    page_id, entry.access_id, role=want.role, inheritance=want.inheritance
                )
        held = {entry.grant.holder for entry in entries}
        for grant in _missing(access.grants, held):
            await self.client.grant_access(
                page_id, grant.holder.body(), role=grant.role, inheritance=grant.inheritance
            )
        policy = None if now.same_policy(access) else access.explicit()
        if policy is not None or reply.get("content") != content or reply.get("title") != title:
            await self.client.replace_page(
                page_id, content=content, title=title, access_policy=policy
            )


def _missing(grants: Iterable[Grant], held: set[Holder]) -> list[Grant]:
    return [grant for grant in grants if grant.holder not in held]
