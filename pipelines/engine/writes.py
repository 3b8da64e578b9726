"""The ledger's only writer: every move of a ledger row, and the count each move adds to.

A row moves through `state.ledger`'s states (pending, in flight, done, failed, waiting, and
undone after `haul undo`) only here, so a row's state never depends on code the engine does
not know (`tests/packaging/test_ledger_writes.py` reads the source to hold it)::

    LedgerWrites(store, stats)   one load's moves of single rows (begin, done, fail, wait, ...)
    plan_ledger(store, plans)    -> new rows: what is staged, planned (settled, renamed)
    settle / rename / forget     what a plan or a send said it settled, renamed or forgot
    wake_waiting, hold_back(_unplanned), retry_failed_rows: waiting rows woken or held
    begin_undo / call_off_undo / record_undone: `haul undo`'s steps around its DELETE

A move that goes with other writes (a row done with the rows its send settled and the base it
wrote) is one transaction; a lone move is one statement, committed on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import structlog

from haul.pipelines.specs import (
    Conflicted,
    EntitySpec,
    Fields,
    Forgotten,
    PlanItem,
    Planned,
    RecordWaiting,
    Ref,
    Renamed,
    Sent,
    Settled,
)
from haul.state.ledger import Ledger, LedgerRow
from haul.state.store import StagedRecord, StagingStore

PlanFn = Callable[[StagingStore], Iterable[PlanItem]]

log = structlog.get_logger(__name__)

# a problem kept under "<entity>:change": a loaded record whose change at the source its
# `refresh` could not carry (the row stays done and changed, so the next load tries again)
CHANGE = ":change"
# a problem kept under "<entity>:kept": a loaded record haul undo (or a mirrored deletion)
# kept because a person changed it in the target since haul wrote it (the row stays done)
KEPT = ":kept"


@dataclass
class LoadStats:
    """What one load did, for the summary and the run record."""

    done: int = 0
    failed: int = 0
    reconciled_found: int = 0
    reconciled_missing: int = 0
    ambiguous: int = 0
    refreshed: int = 0
    refresh_failed: int = 0  # changes at the source not carried: kept as problems
    waiting: int = 0  # records that wait for one a later run brings in (not failed)
    woken: int = 0  # waiting records whose wait is over: loaded by this run


@dataclass
class LedgerWrites:
    """One load's moves of single rows, each counted in `stats`."""

    store: StagingStore
    stats: LoadStats

    def __post_init__(self) -> None:
        self.ledger = self.store.ledger

    def begin(self, row: LedgerRow) -> None:
        """Mark the row in flight, committed before its write is sent."""
        self.ledger.begin(row.entity, row.source_id)

    def release(self, row: LedgerRow) -> None:
        """Put an in-flight row the target does not show back to pending."""
        self.ledger.release(row.entity, row.source_id)

    def done(self, row: LedgerRow, sent: Sent, *, found: bool = False) -> None:
        """The row done, with the rows its send or find settled and forgot and the base it
        wrote: in one transaction when there are any (else one statement, committed alone)."""
        if not sent.settled and not sent.forgotten and sent.written is None:
            self.ledger.done(row.entity, row.source_id, sent.target_id, found=found)
            return
        with self.store.transaction():
            self.ledger.done(row.entity, row.source_id, sent.target_id, found=found)
            if sent.written is not None:
                self.store.written.keep(row.entity, row.source_id, sent.written)
            settle(self.ledger, sent.settled)
            forget(self.ledger, sent.forgotten)

    def fail(self, row: LedgerRow, exc: BaseException) -> None:
        """The row failed with the error's message."""
        self.ledger.fail(row.entity, row.source_id, f"{type(exc).__name__}: {exc}")
        self.stats.failed += 1
        log.warning("record_failed", entity=row.entity, record=row.source_id, error=str(exc))

    def fail_pending(self, row: LedgerRow, reason: str) -> None:
        """The row failed for `reason`, unless it is loaded or failed already."""
        current = self.ledger.get(row.entity, row.source_id)
        if current is not None and current.status in ("pending", "in_flight"):
            self.ledger.fail(row.entity, row.source_id, reason)
            self.stats.failed += 1

    def wait(self, row: LedgerRow, exc: RecordWaiting) -> None:
        """The row waits for a record a later run brings in."""
        self.ledger.wait(row.entity, row.source_id, str(exc))
        self.stats.waiting += 1
        log.info("record_waiting", entity=row.entity, record=row.source_id, reason=str(exc))

    def wake(self, row: LedgerRow) -> None:
        """A waiting row back to pending: what it waits for is in this migration now."""
        self.ledger.wake(row.entity, row.source_id)
        self.stats.woken += 1
        log.info("record_woken", entity=row.entity, record=row.source_id)

    def retarget(self, row: LedgerRow, target_id: str) -> None:
        """The record lives under another target id now (moved there by `relocate`)."""
        self.ledger.retarget(row.entity, row.source_id, target_id)

    def refreshed(self, row: LedgerRow, record: StagedRecord, written: Fields | None) -> None:
        """A loaded record brought up to date: its base and its row, together."""
        with self.store.transaction():
            if written is not None:
                self.store.written.keep(row.entity, row.source_id, written)
            # what the plan hashed (`Planned.content_hash`), as `done` keeps it
            self.ledger.refreshed(row.entity, row.source_id, row.staged_hash or record.content_hash)
        self.store.problems.clear(f"{row.entity}{CHANGE}", row.source_id)
        self.stats.refreshed += 1
        log.info("record_refreshed", entity=row.entity, record=row.source_id)

    def refresh_failed(self, row: LedgerRow, exc: Exception) -> None:
        """A change at the source not carried: kept as the record's problem (the row stays
        done and changed, so the next load looks again), with the base a conflict left."""
        log.warning(
            "record_refresh_failed", entity=row.entity, record=row.source_id, error=str(exc)
        )
        why = f"changed at the source, not carried to the target: {exc}"
        with self.store.transaction():  # the base left and the problem, together
            if isinstance(exc, Conflicted):
                self.store.written.keep(row.entity, row.source_id, exc.written)
            self.store.problems.record(f"{row.entity}{CHANGE}", row.source_id, why, row.parent)
        self.stats.refresh_failed += 1


def wake_waiting(writes: LedgerWrites, specs: Mapping[str, EntitySpec]) -> None:
    """Put back to pending each waiting row whose wait may be over: the ledger plans a record
    it `requires` now (this migration brings its other end in)."""
    store = writes.store
    for row in list(store.ledger.iter_rows(status="waiting")):
        spec = specs.get(row.entity)
        record = store.get_record(spec.staged, row.source_id) if spec else None
        if spec is None or record is None:
            continue  # no longer staged, or of a service not loaded now: it stays named
        if any(store.ledger.get(*ref) is not None for ref in spec.requires(record)):
            writes.wake(row)


def hold_back(store: StagingStore, entities: Iterable[str], reason: str) -> int:
    """Mark every pending row of `entities` waiting, for `reason` (a part of a sharded run
    leaves them to the part that loads them); the rows held."""
    held = 0
    for entity in entities:
        for row in list(store.ledger.iter_rows(status="pending", entity=entity)):
            store.ledger.wait(row.entity, row.source_id, reason)
            held += 1
    return held


def hold_back_unplanned(store: StagingStore, specs: Iterable[EntitySpec], reason: str) -> int:
    """Mark waiting every pending row of `specs` that `requires` a record this store's ledger
    does not plan (a link whose other end another part of a sharded run loads: that part may
    make it from its side meanwhile, so neither tries); the rows held."""
    held = 0
    for spec in specs:
        for row in list(store.ledger.iter_rows(status="pending", entity=spec.name)):
            record = store.get_record(spec.staged, row.source_id)
            if record is None:
                continue
            if any(store.ledger.get(*ref) is None for ref in spec.requires(record)):
                store.ledger.wait(row.entity, row.source_id, reason)
                held += 1
    return held


def retry_failed_rows(store: StagingStore, specs: Sequence[EntitySpec] = ()) -> int:
    """Put every failed row back to pending (`haul load --retry-failed`), and every waiting
    one (what it waits for may have come into the target another way); return how many.
    A loaded record of `specs` that `shows` a failed one is marked changed: its refresh,
    after the retried record in the load's order, writes it again with that record known."""
    failed = {Ref(row.entity, row.source_id) for row in store.ledger.iter_rows(status="failed")}
    with store.transaction():
        _resend_what_shows(store, specs, failed)
        waiting = list(store.ledger.iter_rows(status="waiting"))
        for row in waiting:
            store.ledger.wake(row.entity, row.source_id)
        return store.ledger.retry_failed() + len(waiting)


def _resend_what_shows(store: StagingStore, specs: Sequence[EntitySpec], failed: set[Ref]) -> None:
    for spec in specs:
        if spec.shows is None or spec.refresh is None or not failed:
            continue
        done = [row.source_id for row in store.ledger.iter_rows(entity=spec.name, status="done")]
        for source_id in done:
            record = store.get_record(spec.staged, source_id)
            if record is not None and failed.intersection(spec.shows(record)):
                store.ledger.resend(spec.name, source_id)


def plan_ledger(store: StagingStore, plans: Mapping[str, PlanFn]) -> int:
    """Bring the ledger up to date with what is staged, one transaction; return the new rows
    (run after every extract: counts and status are aggregate queries on the ledger)."""
    with store.transaction():  # the store reads in pages: writing meanwhile is safe
        return sum(_plan_entity(store.ledger, name, plan(store)) for name, plan in plans.items())


def _plan_entity(ledger: Ledger, entity: str, items: Iterable[PlanItem]) -> int:
    """Plan one entity's rows, renaming rows as the plan says, then record what its plan
    settled; return the new rows."""
    settled: list[Settled] = []

    def rows() -> Iterator[dict[str, object]]:
        for item in items:
            if isinstance(item, Settled):
                settled.append(item)
            elif isinstance(item, Renamed):
                rename(ledger, item)  # at once: what the plan reads next sees it renamed
            else:
                yield _ledger_row(entity, item)

    return ledger.plan(rows()) + settle(ledger, settled)


def settle(ledger: Ledger, items: Iterable[Settled]) -> int:
    """Record rows that need no send done (planning those the ledger lacks first); a row
    loaded or failed already keeps its outcome. Return how many rows are new."""
    settled = list(items)
    new = ledger.plan(
        _ledger_row(item.ref.entity, item.planned) for item in settled if item.planned
    )
    for item in settled:
        row = ledger.get(*item.ref)
        if row is not None and row.status in ("pending", "in_flight"):
            ledger.done(*item.ref, item.outcome)
    return new


def rename(ledger: Ledger, item: Renamed) -> None:
    """Key the rows of a record renamed at the source, and those keyed under it, anew."""
    ledger.rename(item.entities, item.old, item.new)
    if item.under:
        ledger.rename_under(
            item.under,
            item.old,
            item.new,
            direct_only=item.direct_only,
            parents=item.parents,
            resend=item.resend,
        )


def forget(ledger: Ledger, items: Iterable[Forgotten]) -> None:
    """Drop the rows of records deleted in the target on purpose (see `Forgotten`)."""
    for item in items:
        ledger.forget(item.entities, item.source_id)
        if item.children:
            ledger.forget_children(item.children, item.source_id)
        if item.under:
            ledger.forget_under(item.under, item.source_id, direct_only=item.direct_only)


def _ledger_row(entity: str, item: Planned) -> dict[str, object]:
    return {
        "entity": entity,
        "source_id": item.record.source_id,
        "parent_entity": item.parent.entity if item.parent else None,
        "parent": item.parent.source_id if item.parent else None,
        "sort_key": item.sort_key,
        "payload_hash": item.content_hash or item.record.content_hash,
    }


def begin_undo(ledger: Ledger, row: LedgerRow) -> None:
    """Mark a loaded row's record as being taken back: committed before its DELETE is sent,
    so a crash after the send leaves a row the next undo sends again (a 404 settles it)."""
    ledger.undo_begin(row.entity, row.source_id)


def call_off_undo(ledger: Ledger, row: LedgerRow) -> None:
    """Record that undo keeps a row's record it had begun to take back (a person changed it
    since haul wrote it, so its DELETE was never confirmed): the row is loaded as before."""
    ledger.undo_called_off(row.entity, row.source_id)


def record_undone(
    ledger: Ledger, row: LedgerRow, how: str, recovery_token: str | None = None
) -> None:
    """Record that the row's record left the target (`how`: deleted, gone, with_parent)."""
    ledger.undone(row.entity, row.source_id, how, recovery_token)
