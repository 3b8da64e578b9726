"""Entity specs: what one kind of record needs from the load engine, and nothing more.

A service describes each kind of record it loads with one `EntitySpec`; the engine
(`pipelines.engine`) runs every spec through the ledger the same way and knows none of them
by name::

    plan(store)            -> Planned rows: which staged records load, under which parent node,
                              in which order among their siblings
    send(record, parent)   -> the target id, after one write (parent: the parent's target id)
    find(record, parent, unclaimed)
                           -> the target id if the target already holds this record, else None;
                              `unclaimed(id)` is False for ids other ledger rows hold, so two
                              identical records are still two
    requires(record)       -> nodes that must be loaded first (a link's other end), optional
    refresh(record, target_id)
                           -> bring a loaded record that changed at the source up to date,
                              optional

A spec whose `phase` is above 0 loads after every tree of the earlier phases is through (links
wait for both their ends). Siblings load in `sort_key` order, one after another, unless the spec
says their order does not matter (`siblings_together`: a page's subpages, its attachments). A record that cannot be loaded raises `RecordFailure` (or the
connectors' `RecordError`) from `send`; the engine records it as failed with that message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from haul.pipelines.downloads import intact
from haul.state.store import StagedRecord, StagingStore


class Ref(NamedTuple):
    """A node of the load: one ledger row, named by its entity and source id."""

    entity: str
    source_id: str

    def __str__(self) -> str:
        return f"{self.entity} {self.source_id}"


class RecordFailure(Exception):
    """This record cannot be loaded; the message says why (it goes into the ledger)."""


async def staged_bytes(store: StagingStore, record: StagedRecord, *, drained: str) -> Path:
    """The file of the bytes the extract downloaded for `record`, once they hash to the
    sha256 it staged: no record sends other bytes than those.

    Bytes that are missing or damaged (what a power cut after the extract can leave: blob
    files are not fsynced) fail the record, and its parent, a `drained` record, loses its
    drained mark, so the next extract downloads them again.
    """
    if record.blob and await intact(store.blobs, record.blob):
        return store.blobs.path(record.blob)
    if record.blob and store.blobs.exists(record.blob):
        store.blobs.discard(record.blob)
        problem = "its staged bytes are damaged (they no longer hash to their sha256)"
    else:
        problem = "it has no staged bytes"
    if record.parent:
        store.forget_drained(drained, source_id=record.parent)
    raise RecordFailure(
        f"{record.entity} {record.source_id}: {problem}; run haul extract to download them"
        " again, then haul load --retry-failed"
    )


@dataclass(frozen=True)
class Planned:
    """One ledger row to plan: the record, the node it loads under, its order among siblings."""

    record: StagedRecord
    parent: Ref | None = None
    sort_key: str = ""


Sender = Callable[[StagedRecord, str | None], Awaitable[str]]
Finder = Callable[[StagedRecord, str | None, Callable[[str], bool]], Awaitable[str | None]]


def _no_requirements(record: StagedRecord) -> list[Ref]:
    return []


@dataclass(frozen=True)
class EntitySpec:
    """How one kind of record is planned, sent and found again; see the module docstring."""

    name: str
    staged: str
    plan: Callable[[StagingStore], Iterable[Planned]]
    send: Sender
    find: Finder
    requires: Callable[[StagedRecord], list[Ref]] = _no_requirements
    refresh: Callable[[StagedRecord, str], Awaitable[None]] | None = None
    phase: int = 0
    claims_with: tuple[str, ...] = field(default_factory=tuple)
    siblings_together: bool = False  # siblings of this spec load concurrently (order is free)

    @property
    def claim_group(self) -> tuple[str, ...]:
        """The ledger entities whose target ids this spec's `find` must not take again."""
        return (self.name, *self.claims_with)


def each_record(
    entity: str,
    *,
    parent: Callable[[StagedRecord], Ref | None] = lambda record: None,
    sort_key: Callable[[StagedRecord], str] = lambda record: "",
    selects: Callable[[StagedRecord], bool] = lambda record: True,
) -> Callable[[StagingStore], Iterator[Planned]]:
    """The usual plan: every staged record of `entity` that `selects` keeps, one row each."""

    def plan(store: StagingStore) -> Iterator[Planned]:
        for record in store.iter_records(entity):
            if selects(record):
                yield Planned(record, parent(record), sort_key(record))

    return plan
