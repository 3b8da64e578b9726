"""The ledger's only writer: every move of a ledger row, and the count each move adds to.

A row moves through `state.ledger`'s states (pending, in flight, done, failed, waiting, and
undone after `haul undo`) only here (and in `upkeep`), so a row's state never depends on code the engine does
not know (`tests/packaging/test_ledger_writes.py` reads the source to hold it)::

    LedgerWrites(store, stats)   one load's moves of single rows (begin, done, fail, wait, ...)
    begin_undo / call_off_undo / record_undone: `haul undo`'s steps around its DELETE
    upkeep.py                    the ledger planned and kept: plan_ledger; settle, rename,
                                 forget; rows held, retried or sent again

A move that goes with other writes (a row done with the rows its send settled and the base it
wrote) is one transaction; a lone move is one statement, committed on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from haul.pipelines.engine.upkeep import forget, settle
from haul.pipelines.specs import (
    Conflicted,
    Fields,
    RecordWaiting,
    Sent,
)
from haul.state.ledger import Ledger, LedgerRow
from haul.state.store import StagedRecord, StagingStore

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
            self.store.conflicts.clear(row.entity, row.source_id)  # and the decisions it applied
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
                self.store.conflicts.record(row.entity, row.source_id, exc.fields)
            self.store.problems.record(f"{row.entity}{CHANGE}", row.source_id, why, row.parent)
        self.stats.refresh_failed += 1


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
