"""Entity specs: what one kind of record needs from the load engine, and nothing more.

A service describes each kind of record it loads with one `EntitySpec`; the engine
(`pipelines.engine`) runs every spec through the ledger the same way and knows none of them
by name::

    plan(store)            -> Planned rows: which staged records load, under which parent node,
                              in which order among their siblings; or Settled rows, which need
                              no send (the target holds the record already); or Renamed rows
                              (a record renamed at the source, loaded under its old key)
    send(record, parent)   -> the target id, after one write (parent: the parent's target id);
                              or `Sent`: the id and the rows the write settled too (an issue's
                              import carries the status staged with it) or made obsolete
                              (`Forgotten`: a record deleted in the target)
    find(record, parent, unclaimed)
                           -> the target id if the target already holds this record, else None;
                              `unclaimed(id)` is False for ids other ledger rows hold, so two
                              identical records are still two; or `Sent`, as a send (a
                              deletion found done forgets the deleted record's rows)
    requires(record)       -> nodes that must be loaded first (a link's other end), optional
    refresh(record, target_id)
                           -> bring a loaded record that changed at the source up to date,
                              optional; it may answer the fields it leaves written (the base
                              of a three-way sync), or raise `Conflicted` for fields changed
                              on both sides, with the base it leaves
    relocate(record, target_id)
                           -> the first step of a refresh: where the record lives in the target
                              now, moved there first if it moved at the source (an issue moved
                              to another queue takes a new key); the engine records a new
                              target id at once, before `refresh` runs with it, optional
    find_first             -> look for the record in the target before sending it at all (the
                              organisation objects: reuse a component or field that is there);
                              the engine also looks first for every record under a parent
                              found in the target rather than made (a lost store's rerun),
                              unless the target refuses a second of it (`refused_twice`)
    fingerprint            -> what tells the record apart in the target, written once: `find`
                              is `fingerprint.find`, and `haul verify` compares every field of
                              it (a spec without one brings its service's verifier), optional

A `Fingerprint` gives the staged record's fields as the load writes them (`expected`), the
target container it lives in (`where`: an issue's key, a page's id), that container's records
as the same fields with their target `id` (`listing`), the fields that identify a record
(`identity`: find matches on them), and optionally fields verify reads only for the one record
it compares (`detail`: the sha256 of the bytes, downloaded) and fields made from another only
to find the record by (`derived`: a comment's text with its file ids blanked), which verify
does not compare: the field they come from is compared, and one change is one difference.

Specs load in phases (`Phase`), in DESIGN's order: the organisation objects the trees point
to, the trees, what needs both its ends (a link), the planning layer, the autoactions last; a
phase starts once every tree of the earlier ones is through, and `requires` names records of
an earlier phase. A phase whose specs all say they need nothing else of the earlier ones
(`needs_named`) starts once every earlier tree is under way, and each of its records waits
only for its parent and what it `requires`. Siblings load in `sort_key` order, one after
another, unless the spec says their order does not matter (`siblings_together`: a page's
subpages, its attachments). A parent's children of one spec wait for its children of the
specs before it, unless the spec says they need nothing of them (`beside_earlier`: a page's
attachments, grids and comments load beside its subpages, once its access is set). A record
that cannot be loaded raises `RecordFailure` (or the connectors' `RecordError`) from `send`;
the engine records it as failed with that message. A record that needs one the target does not
hold yet, and that a later run may bring in (a link whose other end is in a queue not migrated
yet), raises `RecordWaiting`: the engine records it as waiting, neither loaded nor failed, and
the run whose plan holds what it `requires` loads it.

Only the engine writes the ledger: a spec says what its plan or its send settled
(`Settled`) or forgot (`Forgotten`), what its plan renamed (`Renamed`), where it moved its
record (`relocate`), and the engine records it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any, NamedTuple

from haul.connectors.errors import HaulError, NotFoundError
from haul.pipelines.downloads import intact
from haul.state.store import StagedRecord, StagingStore


class Phase(IntEnum):
    """The load's layers, in the order they load (DESIGN, "Exactly-once loading")."""

    DICTIONARY_VALUES = -5  # statuses, issue types, priorities, resolutions: mapped by key
    QUEUES_AND_CATEGORIES = -4  # queues and field categories: what the next ones live in
    FIELDS = -3  # global fields, each in its category
    # the rest of the organisation as configured: local fields, components, versions, boards
    # with their columns, sprints
    CONFIGURATION = -1
    TREES = 0  # issues, wiki pages, back-filled answers, with everything under them
    LINKS = 1  # what needs both its ends: issue links, remote links
    PLANNING = 2  # the planning layer: projects, portfolios, goals, filters, dashboards
    DELETIONS = 3  # what a sync mirrors, once the trees, their links and the planning layer are in
    PLANNING_LINKS = 4  # the planning entities' links: both ends an issue or an entity
    AUTOACTIONS = 9  # autoactions, triggers and macros last, so that importing fires nothing


class Ref(NamedTuple):
    """A node of the load: one ledger row, named by its entity and source id."""

    entity: str
    source_id: str

    def __str__(self) -> str:
        return f"{self.entity} {self.source_id}"


class RecordFailure(HaulError):
    """This record cannot be loaded; the message says why (it goes into the ledger)."""

    exit_code = 3  # a record not loaded: the command ends "done with failed records"


class RecordWaiting(HaulError):
    """This record needs one that is neither in the target nor in this migration yet, and that
    a later run may bring in; the message names it (it goes into the ledger). The record is
    loaded by the run whose plan holds what the spec `requires` of it."""


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
    """One ledger row to plan: the record, the node it loads under, its order among siblings;
    `content_hash` when the row carries less than the whole record (a text patch: its text),
    so a change elsewhere in the record does not bring the row up to date as well."""

    record: StagedRecord
    parent: Ref | None = None
    sort_key: str = ""
    content_hash: str | None = None


@dataclass(frozen=True)
class Settled:
    """A ledger row with nothing to send: the engine records it done, `outcome` in place of a
    target id. `planned`: the row to add first, when the ledger does not hold it yet (a status
    an issue's import carried); without it, the row is planned already (a status a later one
    replaced before it loaded)."""

    ref: Ref
    outcome: str
    planned: Planned | None = None


@dataclass(frozen=True)
class Renamed:
    """A record renamed at the source (an issue moved to another queue, a page to another
    slug): the same record, already loaded. The engine keys the rows of `entities` keyed
    `old` as `new`, and those of `under` keyed under `old` ("old/...") under `new`
    (`direct_only`, `parents`, `resend`: as `Ledger.rename_under`), at once, in the plan's
    transaction: what the plan reads after yielding it sees the rows renamed."""

    entities: tuple[str, ...]
    old: str
    new: str
    under: tuple[str, ...] = ()
    direct_only: bool = False
    parents: bool = False
    resend: tuple[str, ...] = ()


# what a plan yields: rows to plan, rows settled without a send, rows renamed
PlanItem = Planned | Settled | Renamed


@dataclass(frozen=True)
class Forgotten:
    """Rows of a record deleted in the target on purpose, dropped so that the counts hold what
    the target holds: those of `entities` keyed `source_id`, those of `children` loading under
    it, and those of `under` keyed under it ("source_id/...", or only "source_id/x" with
    `direct_only`)."""

    entities: tuple[str, ...]
    source_id: str
    children: tuple[str, ...] = ()
    under: tuple[str, ...] = ()
    direct_only: bool = False


Fields = dict[str, Any]


class Sent(NamedTuple):
    """What a send wrote (or a find found): the target id, the rows its write settled as well,
    the rows it made obsolete (a deletion's record, deleted in the target), and the record's
    fields as written (`written`: the base a later three-way sync compares against, see
    `state.written`). The engine records them with the row, in one transaction."""

    target_id: str
    settled: tuple[Settled, ...] = ()
    forgotten: tuple[Forgotten, ...] = ()
    written: Fields | None = None


class Conflicted(RecordFailure):
    """A refresh carried what it could of a change and left fields changed on both sides as
    the target holds them (the message names each with both values). `written` is the
    record's base now; the engine keeps it, keeps the message as the record's problem, and the
    row stays changed, so each later run looks again until a person settles the conflict.
    `fields`: those a person may settle field by field (`haul resolve`), name -> (the
    source's value, the target's); the engine keeps them (`state.conflicts`)."""

    def __init__(
        self, message: str, written: Fields, fields: dict[str, tuple[Any, Any]] | None = None
    ) -> None:
        super().__init__(message)
        self.written = written
        self.fields = fields or {}


def target_of(found: str | Sent | None) -> str | None:
    """The target id of what a `find` answered."""
    return found.target_id if isinstance(found, Sent) else found


Listing = Callable[[str], Awaitable[list[Fields]]]


@dataclass(frozen=True)
class Fingerprint:
    """What tells one kind of record apart in the target; see the module docstring."""

    expected: Callable[[StagedRecord], Fields]
    where: Callable[[StagedRecord, str | None], str | None]
    listing: Listing
    identity: tuple[str, ...]
    detail: Callable[[str, Fields], Awaitable[Fields]] | None = None
    derived: tuple[str, ...] = ()

    def compared(self, fields: Fields) -> Fields:
        """The fields verify compares: all but the `derived` ones."""
        return {name: value for name, value in fields.items() if name not in self.derived}

    async def find(
        self, record: StagedRecord, parent: str | None, unclaimed: Unclaimed
    ) -> str | None:
        """The first target record with the same identity that no other ledger row holds."""
        container = self.where(record, parent)
        if container is None:
            return None
        wanted = self.expected(record)
        for item in await self.listing(container):
            same = all(item.get(name) == wanted.get(name) for name in self.identity)
            if same and unclaimed(str(item["id"])):
                return str(item["id"])
        return None

    async def read_back(
        self, record: StagedRecord, parent: str | None, target_id: str, listing: Listing
    ) -> Fields | None:
        """The fields of `expected` as the target record `target_id` holds them (read through
        `listing`, which may be a cached `self.listing`); None when it is not there."""
        container = self.where(record, parent)
        try:
            items = await listing(container) if container is not None else []
        except NotFoundError:
            items = []
        found = next((item for item in items if str(item["id"]) == target_id), None)
        if found is None or container is None:
            return None
        if self.detail is not None:
            found = {**found, **await self.detail(container, found)}
        return {name: found.get(name) for name in self.expected(record)}


Sender = Callable[[StagedRecord, str | None], Awaitable[str]]
# what a find is told of a target id: False when another ledger row holds it already
Unclaimed = Callable[[str], bool]
# a find answers the target id, or `Sent` when finding the record settles rows too
Finder = Callable[[StagedRecord, str | None, Unclaimed], Awaitable[str | Sent | None]]


def _no_requirements(record: StagedRecord) -> list[Ref]:
    return []


@dataclass(frozen=True)
class Order:
    """When a spec's records load, and beside what; see the module docstring."""

    phase: Phase = Phase.TREES
    siblings_together: bool = False  # siblings of this spec load concurrently (order is free)
    # this spec's records under a parent load beside its children of the spec before (which
    # need not be loaded first), instead of after them
    beside_earlier: bool = False
    # all a record needs of earlier phases is its parent and what `requires` names (a link:
    # its two issues): its phase starts while the last trees before it finish, each record
    # waiting for just those. Else (an issue needs the organisation objects it points to,
    # unnamed) the phase waits for every tree before it
    needs_named: bool = False
    find_first: bool = False  # look in the target before the first send (reuse what is there)
    # the target refuses a second of this record (an issue imported under its key: 409), so
    # its send stands in for the look a found parent asks for: one the target holds already
    # comes back as a conflict, which the engine's find settles (found: done, else failed)
    refused_twice: bool = False
    # a conflict `haul plan` found is still sent: the send itself fails the record closed (a
    # page whose holder maps to no one is restricted, then failed) instead of leaving it out
    sends_conflicts: bool = False


# the order of most specs: a tree's records, in the trees' phase, one sibling after another
TREE_ORDER = Order()


@dataclass(frozen=True)
class EntitySpec:
    """How one kind of record is planned, sent and found again; see the module docstring."""

    name: str
    staged: str
    plan: Callable[[StagingStore], Iterable[PlanItem]]
    send: Callable[[StagedRecord, str | None], Awaitable[str | Sent]]
    find: Finder
    requires: Callable[[StagedRecord], list[Ref]] = _no_requirements
    # brings a changed record up to date; may answer its fields as written now (its base)
    refresh: Callable[[StagedRecord, str], Awaitable[Fields | None]] | None = None
    relocate: Callable[[StagedRecord, str], Awaitable[str]] | None = None
    order: Order = TREE_ORDER
    claims_with: tuple[str, ...] = field(default_factory=tuple)
    fingerprint: Fingerprint | None = None
    # the records a loaded record's text shows (a description's files): when one of them is
    # loaded again by `--retry-failed`, the record is brought up to date after it (`refresh`)
    shows: Callable[[StagedRecord], Iterable[Ref]] | None = None

    @property
    def phase(self) -> Phase:
        """The phase the spec's records load in (`order.phase`)."""
        return self.order.phase

    @property
    def has_requirements(self) -> bool:
        """Whether `requires` can name anything (the engine reads the record only then)."""
        return self.requires is not _no_requirements

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
