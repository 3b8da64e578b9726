"""`haul undo`: take a migration back from the ledger, newest first, exactly once.

Every record the load wrote (a ledger row `done`, not `found` in the target before) is taken
back by its service's `Removal` (`pipelines.sync.removals`): deleted where the API can delete it,
in the reverse order of its load (newest first: a comment's file before the comment, a
subpage before its page), or kept and named where it cannot (an issue: the tracker deletes
none). Each deletion goes through the ledger as a write does (`engine.begin_undo`, committed,
the DELETE, `engine.record_undone`): killed anywhere, the next undo sends again only what may
not have been deleted, and a 404 then settles it as gone. What lives in another record (a
page's access, a grid's rows) is settled with it. The rows stay done, marked undone, so that
`haul verify` reports each as missing. An undo (not a dry run) writes the run report again:
its counts show the records undone, no longer loaded.

The base decides: a record a person changed in the target since haul wrote it (a comment
edited, a page rewritten, a checklist item edited) is kept, its row loaded as it was, counted
and named (here, in `haul status` and `haul failures`: a problem under "<entity>:kept"), unless
`include_changed` says to delete it all the same. Of a checklist only the items haul wrote go;
an item a person added stays. A deletion counts only once the target confirms it: a reply that
is not the API's (a gateway's sign-in page) stops the undo (`BadReplyError`), the row as it was.

    plan_undo(store, removals)      -> UndoPlan: what would be deleted, kept, settled
    undo(config, dry_run, confirm)  -> UndoResult: the plan and what was done
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import structlog

from haul.connectors.errors import AmbiguousWriteError, HaulError, RecordError
from haul.pipelines.commands.run import claim_target, open_clients, open_store, recorded_run
from haul.pipelines.config import Config
from haul.pipelines.engine import KEPT, begin_undo, call_off_undo, record_undone
from haul.pipelines.report.run import reporting
from haul.pipelines.services import Service
from haul.pipelines.specs import RecordFailure
from haul.pipelines.sync.removals import Removal
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

NO_REMOVAL = "haul knows no deletion for it: remove it by hand if it must go"
KEPT_BY_UNDO = "kept by haul undo (haul undo --include-changed deletes it, or remove it by hand)"


class UndoDeclined(HaulError):
    """The person at the terminal did not confirm: nothing was deleted."""

    def __init__(self) -> None:
        super().__init__("undo not confirmed: nothing was deleted")


@dataclass(frozen=True)
class Kept:
    """A record the load wrote that undo cannot delete, and what a person can do instead."""

    row: LedgerRow
    why: str


@dataclass
class UndoPlan:
    """What an undo would do with each loaded row."""

    to_delete: list[LedgerRow] = field(default_factory=list)  # newest first
    with_parent: list[LedgerRow] = field(default_factory=list)  # settled with their parent
    kept: list[Kept] = field(default_factory=list)
    found: int = 0  # held by the target before the load found them: never deleted
    undone_before: int = 0  # taken back by an earlier undo
    loading: list[LedgerRow] = field(default_factory=list)  # in flight in a stopped load

    def counts(self) -> dict[str, Counter[str]]:
        """entity -> how many rows to delete, settle with their parent, or keep."""
        by_what: dict[str, Counter[str]] = {}
        for what, rows in (
            ("delete", self.to_delete),
            ("with parent", self.with_parent),
            ("keep", [kept.row for kept in self.kept]),
        ):
            for row in rows:
                by_what.setdefault(row.entity, Counter())[what] += 1
        return by_what


@dataclass
class UndoResult:
    """The plan, and what the undo did of it."""

    plan: UndoPlan
    dry_run: bool = False
    deleted: Counter[str] = field(default_factory=Counter)  # entity -> deleted now
    gone: Counter[str] = field(default_factory=Counter)  # entity -> found gone (404)
    with_parent: Counter[str] = field(default_factory=Counter)  # entity -> went with its parent
    kept_with_parent: list[LedgerRow] = field(default_factory=list)  # their parent stays
    kept_with: Counter[tuple[str, str]] = field(default_factory=Counter)  # (entity, parent's)
    recovery_tokens: dict[str, str] = field(default_factory=dict)  # "entity id" -> token
    failed: list[tuple[LedgerRow, str]] = field(default_factory=list)
    changed: list[Kept] = field(default_factory=list)  # kept: a person changed them since
    stopped: bool = False  # a signal asked it to stop: what is left goes on the next run

    @property
    def complete(self) -> bool:
        """Everything undo can delete is gone, and no load was left in flight."""
        return not self.failed and not self.plan.loading


def plan_undo(store: StagingStore, removals: Mapping[str, Removal]) -> UndoPlan:
    """Sort every loaded row: to delete (newest first), to settle with its parent, to keep."""
    plan = UndoPlan()
    for row in store.ledger.iter_rows(status="done"):
        removal = removals.get(row.entity)
        if row.undone:
            plan.undone_before += 1
        elif row.found:
            plan.found += 1
        elif removal is None:
            plan.kept.append(Kept(row, NO_REMOVAL))
        elif removal.with_parent:
            plan.with_parent.append(row)
        elif removal.in_use is not None and (why := removal.in_use(row)):
            plan.kept.append(Kept(row, why))
        elif removal.delete is not None:
            plan.to_delete.append(row)
        else:
            plan.kept.append(Kept(row, removal.by_hand or NO_REMOVAL))
    plan.to_delete.sort(key=lambda row: (row.updated_at, row.entity, row.source_id), reverse=True)
    plan.loading = list(store.ledger.iter_rows(status="in_flight"))
    return plan


@dataclass
class Undoer:
    """One undo over one store: `run(plan)` deletes and settles, row after row."""

    store: StagingStore
    removals: Mapping[str, Removal]
    stop_requested: Callable[[], bool] = lambda: False
    include_changed: bool = False  # delete what a person changed since haul wrote it too

    async def run(self, plan: UndoPlan) -> UndoResult:
        self.result = UndoResult(plan)
        for row in plan.to_delete:
            if self.stop_requested():
                self.result.stopped = True
                break
            await self._take_back(row)
        self._settle_with_parents(plan.with_parent)
        return self.result

    async def _take_back(self, row: LedgerRow) -> None:
        """Delete one record exactly once: marked in flight (committed), sent, recorded; one
        a person changed since haul wrote it is kept (see the module docstring)."""
        removal = self.removals[row.entity]
        delete = removal.delete
        assert delete is not None  # planned for deletion
        if await self._kept_as_changed(row, removal):
            return
        if row.undo != "in_flight":
            begin_undo(self.store.ledger, row)
        try:
            removed = await delete(row)
        except AmbiguousWriteError as exc:  # stays in flight: the next undo settles it
            self._fail(row, f"the deletion's outcome is uncertain ({exc}): run haul undo again")
            return
        except (RecordError, RecordFailure) as exc:
            self._fail(row, str(exc))
            return
        how = "deleted" if removed.deleted else "gone"
        with self.store.transaction():
            record_undone(self.store.ledger, row, how, removed.recovery_token)
            self.store.problems.clear(f"{row.entity}{KEPT}", row.source_id)
        (self.result.deleted if removed.deleted else self.result.gone)[row.entity] += 1
        if removed.recovery_token:
            self.result.recovery_tokens[f"{row.entity} {row.target_id}"] = removed.recovery_token
        log.info("record_undone", entity=row.entity, record=row.source_id, how=how)

    async def _kept_as_changed(self, row: LedgerRow, removal: Removal) -> bool:
        """Whether the row's record stays because a person changed it since haul wrote it
        (what of it is still haul's as written goes: a checklist's other items); named."""
        if self.include_changed or removal.changed is None:
            return False
        try:
            why = await removal.changed(row)
            if why is not None and removal.delete_unchanged is not None:
                await removal.delete_unchanged(row)
        except (RecordError, RecordFailure) as exc:
            self._fail(row, str(exc))
            return True
        if why is None:
            return False
        with self.store.transaction():
            if row.undo == "in_flight":  # begun by an undo that stopped: the record is held
                call_off_undo(self.store.ledger, row)
            self.store.problems.record(
                f"{row.entity}{KEPT}", row.source_id, f"{KEPT_BY_UNDO}: {why}", parent=row.parent
            )
        self.result.changed.append(Kept(row, why))
        log.info("undo_kept_changed", entity=row.entity, record=row.source_id, why=why)
        return True

    def _fail(self, row: LedgerRow, why: str) -> None:
        log.warning("undo_failed", entity=row.entity, record=row.source_id, error=why)
        self.result.failed.append((row, why))

    def _settle_with_parents(self, rows: list[LedgerRow]) -> None:
        """Each row whose parent was taken back went with it; the others stay with theirs.
        Repeated while one settles: a parent may itself go with its own."""
        waiting = list(rows)
        while True:
            gone: list[LedgerRow] = []
            stay: list[LedgerRow] = []
            for row in waiting:
                (gone if self._parent_undone(row) else stay).append(row)
            for row in gone:
                record_undone(self.store.ledger, row, "with_parent")
                self.result.with_parent[row.entity] += 1
            waiting = stay
            if not gone:
                break
        self.result.kept_with_parent = waiting
        for row in waiting:
            home = self._lives_in(row)
            self.result.kept_with[(row.entity, home[0] if home else "parent")] += 1

    def _parent_undone(self, row: LedgerRow) -> bool:
        home = self._lives_in(row)
        if home is None:
            return False
        parent = self.store.ledger.get(*home)
        return parent is not None and parent.undone

    def _lives_in(self, row: LedgerRow) -> tuple[str, str] | None:
        """The record the row goes or stays with: its removal's `lives_in`, else its parent."""
        lives_in = self.removals[row.entity].lives_in
        if lives_in is not None:
            return lives_in(row)
        return (row.parent_entity, row.parent or "") if row.parent_entity else None


async def undo(
    config: Config,
    services: Sequence[Service],
    *,
    environ: Mapping[str, str] = os.environ,
    dry_run: bool = False,
    include_changed: bool = False,
    confirm: Callable[[UndoPlan], bool] = lambda plan: True,
    stop_requested: Callable[[], bool] = lambda: False,
) -> UndoResult:
    """Take back what the loads into the target wrote; with `dry_run`, only say what would
    go. `confirm` sees the plan before any deletion and may decline (UndoDeclined: nothing
    deleted). `include_changed`: delete also what a person changed since haul wrote it."""
    target = config.require_target("undo")
    async with open_clients(config, services, environ, target) as (targets,):
        claim_target(config, target, record=not dry_run)  # a 404 is "gone" only in its org
        with (
            open_store(config.staging_path) as store,
            nullcontext() if dry_run else reporting(store, services),  # undone, not loaded
            recorded_run(store, "undo"),
        ):
            removals: dict[str, Removal] = {}
            for service, client in targets:
                if service.plans(config):  # nothing of a service that loads nothing (forms)
                    parts = await service.target(config, client, store, read_only=True)
                    removals.update(parts.removals)
            plan = plan_undo(store, removals)
            if dry_run:
                return UndoResult(plan, dry_run=True)
            if not confirm(plan):
                raise UndoDeclined()
            undoer = Undoer(store, removals, stop_requested, include_changed)
            result = await undoer.run(plan)
    log.info(
        "undo_finished",
        deleted=sum(result.deleted.values()),
        gone=sum(result.gone.values()),
        failed=len(result.failed),
        kept_changed=len(result.changed),
    )
    return result
