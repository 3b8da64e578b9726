"""One record, exactly once: look, send, settle an uncertain write, bring a change up to date.

The walk (`pipelines.engine.walk`) hands each ledger row here with its parent's target id::

    apply(spec, row, parent_target, parent_found) -> the target id, or None (not loaded)
        done already          -> its target id, nothing sent
        failed or waiting     -> None
        looked for first      -> found: done and marked found, nothing sent
          (a spec that reuses what is there, `find_first`, or a parent found in the target)
        in a planned conflict -> found now: done; else failed, unsent
        else                  -> send_once: in flight, send, done; an uncertain write (a
                                 timeout, a conflict) settled by `find` at once
    refresh(spec, row, target_id)     a loaded record changed at the source: moved first
                                      (`relocate`), then brought up to date (`refresh`)
    find(spec, record, parent_target) -> Sent | None: what the spec's find answered

Every ledger move goes through `LedgerWrites`; what the walk needs to know of a row's outcome
(found in the target, blocked by a conflict) it reads from `found_now`, `org_found` and
`blocked`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from haul.connectors.errors import AmbiguousWriteError, ConflictError, RecordError
from haul.pipelines.engine.writes import LedgerWrites
from haul.pipelines.progress import Progress
from haul.pipelines.specs import EntitySpec, RecordFailure, RecordWaiting, Ref, Sent
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

MAX_AMBIGUOUS = 3
PLAN_CONFLICTS = "plan_conflicts"  # the checkpoint `haul plan` keeps its conflicts in
# what a record under (or needing) a conflicting one fails with, after "<entity> <id>": it
# reads as waiting under that record ("... was not loaded", see `pipelines.commands.failures`)
BLOCKED = " was not loaded, blocked by its conflict: "


class PlannedConflict(RecordFailure):
    """`haul plan` found this record in conflict with what the target holds; not sent."""


def planned_conflicts(store: StagingStore) -> dict[Ref, str]:
    """(entity, source id) -> why, as the last `haul plan` found them."""
    kept = store.get_checkpoint(PLAN_CONFLICTS) or {}
    return {Ref(entity, source_id): why for entity, source_id, why in kept.get("conflicts", [])}


@dataclass
class RecordLoader:
    """Loads one record at a time exactly once, for one load's walk."""

    store: StagingStore
    specs: Mapping[str, EntitySpec]
    writes: LedgerWrites
    progress: Progress
    task: str  # the progress task records loaded advance
    # entities with children in the ledger: a found one's children look before they are made
    parents: set[str] = field(default_factory=set)
    conflicts: dict[Ref, str] = field(default_factory=dict)  # found by the last `haul plan`
    blocked: dict[Ref, str] = field(
        default_factory=dict
    )  # a record in conflict -> what it blocks says
    found_now: set[Ref] = field(default_factory=set)  # found in the target just now
    # the target held a record of this migration that this store had not sent (a rerun with
    # a lost store): a root, whose parent is the target org, is looked for too
    org_found: bool = False

    async def apply(
        self, spec: EntitySpec, row: LedgerRow, parent_target: str | None, parent_found: bool
    ) -> str | None:
        """Load one record exactly once; its target id when it is in the target, else None.
        Looked for first where the target may hold it already: a spec that reuses what is
        there (`find_first`), or a record under a parent found there (a lost store's rerun)
        that the target would not refuse a second of (`refused_twice`: its send's conflict
        is the look)."""
        if row.status == "done":
            return row.target_id
        if row.status in ("failed", "waiting"):
            return None
        record = self.record(spec, row)
        if record is None:
            return self._fail(
                row, RecordFailure(f"{row.entity} {row.source_id} is no longer staged")
            )
        look_first = spec.order.find_first or (parent_found and not spec.order.refused_twice)
        if look_first and (found := await self.find(spec, record, parent_target)):
            return self._done(row, found, found=True)  # the target has it: reused, not sent
        conflict = self.conflicts.get(Ref(row.entity, row.source_id))
        if conflict is not None and not spec.order.sends_conflicts:
            return await self._planned_conflict(spec, row, record, parent_target, conflict)
        return await self.send_once(spec, row, record, parent_target)

    async def send_once(
        self, spec: EntitySpec, row: LedgerRow, record: StagedRecord, parent_target: str | None
    ) -> str | None:
        """In flight, send, done. A write whose outcome is uncertain (it may have been
        applied, or the target held the record before) is settled by `find` at once: found,
        done; else sent again, at most `MAX_AMBIGUOUS` times, then failed naming the error."""
        uncertain = ""  # the last uncertain write's error: the failure names it
        for _ in range(MAX_AMBIGUOUS):
            self.writes.begin(row)
            try:
                sent = await spec.send(record, parent_target)
            except (AmbiguousWriteError, ConflictError) as exc:
                found = await self._look_after(spec, record, parent_target, row, exc)
                if found:  # after a conflict, the target held it before this write
                    return self._done(row, found, found=isinstance(exc, ConflictError))
                if isinstance(exc, ConflictError):  # the target holds one that is not ours
                    self.block(row, str(exc))
                    return self._fail(row, exc)
                self.writes.release(row)
                uncertain = str(exc)
                continue
            except (RecordError, RecordFailure) as exc:
                return self._fail(row, exc)
            except RecordWaiting as exc:
                self.writes.wait(row, exc)
                return None
            return self._done(row, Sent(sent) if isinstance(sent, str) else sent)
        return self._fail(
            row,
            RecordFailure(
                f"the write's outcome stayed uncertain; the target does not show it: {uncertain}"
            ),
        )

    async def _look_after(
        self,
        spec: EntitySpec,
        record: StagedRecord,
        parent_target: str | None,
        row: LedgerRow,
        exc: AmbiguousWriteError | ConflictError,
    ) -> Sent | None:
        """What the target shows of the record after a write whose outcome is uncertain."""
        self.writes.stats.ambiguous += isinstance(exc, AmbiguousWriteError)
        found = await self.find(spec, record, parent_target)
        log.warning(
            "write_uncertain",
            entity=row.entity,
            record=row.source_id,
            error=str(exc),
            found=bool(found),
        )
        return found

    async def _planned_conflict(
        self, spec: EntitySpec, row: LedgerRow, record: StagedRecord, parent: str | None, why: str
    ) -> str | None:
        """A record the plan found in conflict: done if the target now holds it as ours, else
        failed with the plan's reason, unsent (exactly once: nothing was written)."""
        if found := await self.find(spec, record, parent):
            return self._done(row, found, found=True)
        self.block(row, why)
        return self._fail(
            row,
            PlannedConflict(
                f"{why} (found by haul plan: free the key or map it elsewhere, or carry a record"
                " over a target limit another way; run haul plan again, then haul load"
                " --retry-failed)"
            ),
        )

    async def reconcile(self, spec: EntitySpec, row: LedgerRow, parent_target: str | None) -> None:
        """An in-flight row an interrupted run left: done if the target has its record,
        else pending again."""
        record = self.record(spec, row)
        found = await self.find(spec, record, parent_target) if record is not None else None
        if found:
            self.writes.done(row, found)
            self.writes.stats.reconciled_found += 1
        else:
            self.writes.release(row)
            self.writes.stats.reconciled_missing += 1
        log.info("in_flight_reconciled", entity=row.entity, record=row.source_id, found=bool(found))

    async def refresh(self, spec: EntitySpec, row: LedgerRow, target_id: str) -> None:
        """Bring a loaded record that changed at the source up to date (moved first)."""
        record = self.record(spec, row)
        if record is None or spec.refresh is None:
            return
        try:
            if spec.relocate is not None:
                target_id = await self._relocate(spec, row, record, target_id)
            written = await spec.refresh(record, target_id)
        except (RecordError, RecordFailure) as exc:
            self.writes.refresh_failed(row, exc)
            return
        self.writes.refreshed(row, record, written)

    async def _relocate(
        self, spec: EntitySpec, row: LedgerRow, record: StagedRecord, target_id: str
    ) -> str:
        """Where the record lives in the target now (moved there first): a new target id is
        committed at once, so a refresh failing or killed after the move leaves the ledger
        naming where the record is."""
        assert spec.relocate is not None
        now = await spec.relocate(record, target_id)
        if now != target_id:
            self.writes.retarget(row, now)
        return now

    async def find(
        self, spec: EntitySpec, record: StagedRecord, parent_target: str | None
    ) -> Sent | None:
        """What the spec's find answered, as `Sent` (a find may settle rows as a send does)."""

        def unclaimed(target_id: str) -> bool:
            return not self.store.ledger.is_claimed(spec.claim_group, target_id)

        found = await spec.find(record, parent_target, unclaimed)
        if not found:
            return None
        return found if isinstance(found, Sent) else Sent(found)

    def record(self, spec: EntitySpec, row: LedgerRow) -> StagedRecord | None:
        """The staged record the row loads."""
        return self.store.get_record(spec.staged, row.source_id)

    def block(self, row: LedgerRow, why: str) -> None:
        """Keep what the records the row's conflict blocks fail with."""
        ref = Ref(row.entity, row.source_id)
        self.blocked[ref] = f"{ref}{BLOCKED}{why}"

    def _done(self, row: LedgerRow, sent: Sent, *, found: bool = False) -> str:
        """Record the row done; `found`: the target held it before this store sent it."""
        self.writes.done(row, sent, found=found)
        if found and row.entity in self.parents:  # its children look before they are made
            self.found_now.add(Ref(row.entity, row.source_id))
        if found and not self.specs[row.entity].order.find_first:  # not an object merely reused
            self.org_found = True
        self.writes.stats.done += 1
        self.progress.advance(self.task)
        return sent.target_id

    def _fail(self, row: LedgerRow, exc: BaseException) -> str | None:
        """Record the row failed: no target id (None, for the walk)."""
        self.writes.fail(row, exc)
        return None
