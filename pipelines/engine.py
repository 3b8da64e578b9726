"""The load engine: every entity spec's records into the target through the ledger, exactly once.

For each record: mark it `in_flight` and commit, send, record `done` with the target id and
commit. Before loading, every `in_flight` row an interrupted run left is reconciled by asking
the target (the spec's `find`); an ambiguous write (it may have been applied) is resolved the
same way at once. A record the target rejects is `failed` with its reason, and so is every
record below it ("... was not loaded"), and the run goes on. A record that needs one no run
brought in yet (`RecordWaiting`) is `waiting`, and so is nothing else: a later load wakes it
once its plan holds what the record `requires` (or `--retry-failed` asks).

A record found in the target rather than made (its send conflicts and `find` shows it is
ours: a rerun with a lost store) is `done` and marked found; each record under it is looked
for before it is made, and once any record was found so, every root is too (its parent is the
target org). A cycle of parents (staged from reads taken at different moments) fails its
records, named ("parent cycle: portfolio 12 -> 15 -> 12"), and what hangs under them.

The ledger is the plan: each row names the node it loads under. The engine loads in phases,
in `Phase` order (the organisation objects, the trees, what needs both ends, ...):
in each, the trees of that phase's specs, a root (a row whose parent is of an earlier phase,
or none) then its children in spec order and, among siblings, in `sort_key` order (or all at
once where the spec allows), depth first (a spec's group of children beside the groups before it when it loads
`beside_earlier`). Independent trees load concurrently. A phase whose specs all name what
they need of the earlier ones (`needs_named`: the links) starts once every earlier tree is
under way, its records each waiting for just those trees. A record whose
parent, or anything it `requires`, is planned but not loaded fails with that reason. The
engine knows no entity by name. A tree whose request waits to be sent again (a 429's
`Retry-After`) lends its place to the next tree meanwhile (`concurrency.for_each`'s `lend`):
its records' ledger steps are the same, it only waits aside.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import structlog

from haul.connectors.errors import AmbiguousWriteError, ConflictError, RecordError
from haul.pipelines.concurrency import for_each, gather_all
from haul.pipelines.parent_cycles import name_cycle
from haul.pipelines.progress import Progress
from haul.pipelines.specs import (
    Conflicted,
    EntitySpec,
    Forgotten,
    Phase,
    PlanItem,
    Planned,
    RecordFailure,
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

MAX_AMBIGUOUS = 3
PLAN_CONFLICTS = "plan_conflicts"  # the checkpoint `haul plan` keeps its conflicts in
# what a record under (or needing) a conflicting one fails with, after "<entity> <id>": it
# reads as waiting under that record ("... was not loaded", see `pipelines.failures`)
BLOCKED = " was not loaded, blocked by its conflict: "
# a problem kept under "<entity>:change": a loaded record whose change at the source its
# `refresh` could not carry (the row stays done and changed, so the next load tries again)
CHANGE = ":change"


class PlannedConflict(RecordFailure):
    """`haul plan` found this record in conflict with what the target holds; not sent."""


def planned_conflicts(store: StagingStore) -> dict[Ref, str]:
    """(entity, source id) -> why, as the last `haul plan` found them."""
    kept = store.get_checkpoint(PLAN_CONFLICTS) or {}
    return {Ref(entity, source_id): why for entity, source_id, why in kept.get("conflicts", [])}


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
class LoadEngine:
    """One load over the given specs; `plan()` then `run()`."""

    store: StagingStore
    specs: Sequence[EntitySpec]
    progress: Progress = field(default_factory=Progress)
    concurrency: int = 32
    stop_requested: Callable[[], bool] = lambda: False
    stats: LoadStats = field(default_factory=LoadStats)

    def __post_init__(self) -> None:
        self.ledger = self.store.ledger
        self._specs = {spec.name: spec for spec in self.specs}
        self._order = {spec.name: index for index, spec in enumerate(self.specs)}

    def plan(self) -> int:
        """Put every loadable staged record in the ledger; return how many rows are new."""
        return plan_ledger(self.store, {spec.name: spec.plan for spec in self.specs})

    async def run(self) -> LoadStats:
        """Reconcile what an interrupted run left in flight, then load phase after phase."""
        self._parents = self.ledger.parent_entities()  # no children query for a leaf's row
        self._conflicts = planned_conflicts(self.store)
        self._blocked: dict[Ref, str] = {}  # a record in conflict -> what it blocks says
        self._cycles: dict[Ref, tuple[list[Ref], str]] = {}  # its first member -> it, named
        self._found_now: set[Ref] = set()  # found in the target just now, children to load
        # the target held a record of this migration that this store had not sent (a rerun
        # with a lost store): a root, whose parent is the target org, is looked for too
        self._org_found = self.ledger.any_found(s.name for s in self.specs if not s.find_first)
        self.wake_waiting()
        await self.reconcile_in_flight()
        self._task = self.progress.task("records loaded")
        self._under_way: dict[Ref, asyncio.Event] = {}  # trees of earlier phases loading
        loading: list[asyncio.Task[None]] = []
        try:
            for phase in sorted({spec.phase for spec in self.specs}):
                if not self._starts_early(phase):
                    await gather_all(loading)  # every tree before it is through
                    loading = []
                handed_out = asyncio.Event()
                loading.append(asyncio.create_task(self._load_phase(phase, handed_out)))
                # the next phase may start once each tree of this one is under way
                await asyncio.wait(
                    [loading[-1], asyncio.create_task(handed_out.wait())],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if loading[-1].done():
                    loading.pop().result()  # an error ends the load here
            await gather_all(loading)
        finally:
            for task in loading:
                task.cancel()
            await asyncio.gather(*loading, return_exceptions=True)
        return self.stats

    def _starts_early(self, phase: Phase) -> bool:
        """Whether `phase` may start while the trees before it finish: each of its specs
        names all it needs of them (its parent, what it `requires`), which its records then
        wait for one by one (a tree waiting out a 429 then holds up only what needs it)."""
        return all(spec.needs_named for spec in self.specs if spec.phase == phase)

    async def _load_phase(self, phase: Phase, handed_out: asyncio.Event) -> None:
        def roots() -> Iterator[Ref]:
            yield from self._roots(phase)
            handed_out.set()

        try:
            await for_each(
                roots(),
                self._load_tree if self._last(phase) else self._load_tracked,
                self.concurrency,
                self.stop_requested,
                # a tree waiting out a 429 lends its place to the next (one at a time stays so)
                lend=self.concurrency > 1,
            )
        finally:
            handed_out.set()

    def _last(self, phase: Phase) -> bool:
        """Whether no later phase starts early (nothing will wait for this one's trees)."""
        return not any(self._starts_early(p) for p in {s.phase for s in self.specs} if p > phase)

    async def _load_tracked(self, root: Ref) -> None:
        """Load the tree of `root`, known as under way until it is through."""
        through = self._under_way[root] = asyncio.Event()
        try:
            await self._load_tree(root)
        finally:
            del self._under_way[root]
            through.set()

    async def _settled(self, ref: Ref, phase: Phase) -> None:
        """Wait until `ref` is loaded (and, when it changed at the source, brought up to
        date) or failed, when a tree of a phase before `phase` still under way holds it
        (nothing to wait for when every earlier phase is through)."""
        if not self._under_way:
            return
        earlier = self._phase(ref.entity)
        if earlier is None or earlier >= phase:  # its own phase's trees are not waited on
            return
        row = self.ledger.get(*ref)
        # a done row whose record changed is not settled until its refresh ran: what needs it
        # may depend on what the refresh writes (the target checks a link's time against both
        # issues' windows, which an issue's refresh moves)
        if row is None or row.status == "failed" or (row.status == "done" and not row.changed):
            return
        through = self._under_way.get(self._root_of(row, {}))
        if through is not None:
            await through.wait()

    async def reconcile_in_flight(self) -> None:
        """Settle rows an interrupted run left `in_flight`: done if the target has them."""
        for row in list(self.ledger.iter_rows(status="in_flight")):
            spec, ref = self._specs[row.entity], Ref(row.entity, row.source_id)
            record = self._record(spec, row)
            found = None
            if record is not None:
                found = await self._find(spec, record, self._parent_target(row))
            if found:
                self._record_done(row, found)
                self.stats.reconciled_found += 1
            else:
                self.ledger.release(row.entity, row.source_id)
                self.stats.reconciled_missing += 1
            log.info(
                "in_flight_reconciled", entity=ref.entity, record=ref.source_id, found=bool(found)
            )

    def wake_waiting(self) -> None:
        """Put back to pending each waiting row whose wait may be over: the ledger plans a
        record it `requires` now (this migration brings its other end in)."""
        for row in list(self.ledger.iter_rows(status="waiting")):
            spec = self._specs.get(row.entity)
            record = self._record(spec, row) if spec is not None else None
            if spec is None or record is None:
                continue  # no longer staged, or of a service not loaded now: it stays named
            if any(self.ledger.get(*ref) is not None for ref in spec.requires(record)):
                self.ledger.wake(row.entity, row.source_id)
                self.stats.woken += 1
                log.info("record_woken", entity=row.entity, record=row.source_id)

    # -- which trees to visit -------------------------------------------------------------

    def _roots(self, phase: Phase) -> list[Ref]:
        """The roots of every tree of `phase` that has a pending row or a changed loaded one."""
        roots: dict[Ref, None] = {}
        found: dict[Ref, Ref] = {}
        for spec in self.specs:
            if spec.phase != phase:
                continue
            for row in self.ledger.iter_rows(status="pending", entity=spec.name):
                roots[self._root_of(row, found)] = None
            if spec.refresh is not None:
                for row in self.ledger.iter_changed(spec.name):
                    roots[self._root_of(row, found)] = None
        return sorted(roots, key=lambda ref: (self._order.get(ref.entity, 0), ref.source_id))

    def _phase(self, entity: str) -> Phase | None:
        spec = self._specs.get(entity)
        return None if spec is None else spec.phase

    def _root_of(self, row: LedgerRow, found: dict[Ref, Ref]) -> Ref:
        """Walk up the parents of the row's own phase to the topmost planned row, remembering
        the root of every parent on the way (not of the row itself: rows far outnumber
        parents, and a cache of every row held about 200 bytes per ledger row, 180 MB on the
        100 000-issue org). A parent of another phase loaded before: the row is a root. A
        walk that comes back to a row it passed met a cycle (staged from reads taken at
        different moments): its first member is the root, and its tree fails, named."""
        root = Ref(row.entity, row.source_id)
        phase = self._phase(row.entity)
        path: dict[Ref, None] = {root: None}  # the row, then its parents upwards, in order
        current: LedgerRow | None = row
        while current is not None and current.parent_entity:
            parent = Ref(current.parent_entity, current.parent or "")
            if self._phase(parent.entity) != phase:
                break
            if parent in found:
                root = found[parent]
                break
            if parent in path:
                members = list(path)
                root = self._cycle(members[members.index(parent) :])
                break
            current = self.ledger.get(*parent)
            if current is not None:  # else the parent is not planned: the walk ends below it
                path[parent] = None
                root = parent
        for ref in list(path)[1:]:
            found[ref] = root
        return root

    def _cycle(self, members: list[Ref]) -> Ref:
        """Keep a cycle of parents under its first member, named from there."""
        members, named = name_cycle(members)
        self._cycles[members[0]] = (members, named)
        return members[0]

    def _fail_cycle(self, root: Ref) -> None:
        """Fail every record of the cycle kept under `root`, and everything under them."""
        members, named = self._cycles[root]
        log.warning("parent_cycle", entity=root.entity, record=root.source_id, cycle=named)
        reason = (
            f"{named} (each is staged under the next): give one of them another parent at"
            " the source, run haul extract, then haul load --retry-failed"
        )
        rows = [row for ref in members if (row := self.ledger.get(*ref)) is not None]
        for row in rows:
            self._fail_pending(row, reason)
        seen = set(members)
        for row in rows:
            self._fail_below(row, f"{row.entity} {row.source_id} was not loaded", seen)

    # -- loading a tree ---------------------------------------------------------------------

    async def _load_tree(self, root: Ref) -> None:
        if root in self._cycles:
            self._fail_cycle(root)
            return
        row = self.ledger.get(*root)
        if row is None:
            return
        parent_target, parent_found = None, self._org_found
        if row.parent_entity:  # a root whose parent is known but not loaded
            parent_ref = Ref(row.parent_entity, row.parent or "")
            await self._settled(parent_ref, self._specs[row.entity].phase)
            parent = self.ledger.get(row.parent_entity, row.parent or "")
            if parent is None or parent.status != "done":
                ref = Ref(row.parent_entity, row.parent or "")
                self._fail_subtree(row, self._blocked.get(ref, f"{ref} was not loaded"))
                return
            parent_target, parent_found = parent.target_id, bool(parent.found)
        await self._load_node(row, parent_target, parent_found)

    async def _load_node(
        self, row: LedgerRow, parent_target: str | None, parent_found: bool = False
    ) -> None:
        """Load the row, then what hangs under it; `parent_found`: the row's parent was found
        in the target rather than made (a rerun with a lost store), so the row is looked for
        before it is made."""
        spec = self._specs[row.entity]
        if (missing := await self._unmet(spec, row)) is not None:
            self._fail_subtree(row, missing)
            return
        target_id = await self._apply(spec, row, parent_target, parent_found)
        ref = Ref(row.entity, row.source_id)
        found = bool(row.found) if row.status == "done" else ref in self._found_now
        self._found_now.discard(ref)
        if target_id is None:
            self._fail_below(row, self._blocked.get(ref, f"{ref} was not loaded"))
            return
        if spec.refresh is not None and row.changed:
            await self._refresh(spec, row, target_id)
            # a refresh may have moved the record (`relocate`: an issue into another queue):
            # its children load under the target id the ledger holds now
            target_id = self.ledger.target_id(row.entity, row.source_id) or target_id
        for wave in self._waves(row):
            await gather_all([self._load_siblings(group, target_id, found) for group in wave])

    def _waves(self, row: LedgerRow) -> list[list[list[LedgerRow]]]:
        """The row's children by spec, in waves: a spec's group joins the wave before it
        when the spec loads `beside_earlier`, else starts a wave of its own."""
        waves: list[list[list[LedgerRow]]] = []
        for entity, group in groupby(self._children(row), key=lambda child: child.entity):
            if waves and self._specs[entity].beside_earlier:
                waves[-1].append(list(group))
            else:
                waves.append([list(group)])
        return waves

    async def _load_siblings(
        self, siblings: list[LedgerRow], parent_target: str, parent_found: bool
    ) -> None:
        if self._specs[siblings[0].entity].siblings_together and len(siblings) > 1:
            await for_each(
                siblings,
                lambda child: self._load_node(child, parent_target, parent_found),
                self.concurrency,
            )
        else:
            for child in siblings:
                await self._load_node(child, parent_target, parent_found)

    def _children(self, row: LedgerRow) -> list[LedgerRow]:
        """The next level down in the row's own phase: in spec order, then sibling order
        (children of a later phase load as roots of their own phase)."""
        if row.entity not in self._parents:
            return []
        phase = self._phase(row.entity)
        rows = [
            child
            for child in self.ledger.children(row.entity, row.source_id)
            if self._phase(child.entity) == phase
        ]
        return sorted(rows, key=lambda child: self._order[child.entity])

    async def _unmet(self, spec: EntitySpec, row: LedgerRow) -> str | None:
        """Why the row cannot load yet: a record it `requires` that is planned and not done
        (requirements load in an earlier phase); None when every one is loaded."""
        if row.status != "pending" or not spec.has_requirements:
            return None
        record = self._record(spec, row)
        for ref in spec.requires(record) if record else []:
            await self._settled(ref, spec.phase)
            needed = self.ledger.get(*ref)
            if needed is not None and needed.status != "done":
                return self._blocked.get(
                    ref, f"{ref} was not loaded, so the {spec.name} cannot be made"
                )
        return None

    async def _refresh(self, spec: EntitySpec, row: LedgerRow, target_id: str) -> None:
        record = self._record(spec, row)
        if record is None or spec.refresh is None:
            return
        problems, kept = self.store.problems, f"{row.entity}{CHANGE}"
        try:
            if spec.relocate is not None:
                target_id = await self._relocate(spec, row, record, target_id)
            written = await spec.refresh(record, target_id)
        except (RecordError, RecordFailure) as exc:
            log.warning(
                "record_refresh_failed", entity=row.entity, record=row.source_id, error=str(exc)
            )
            why = f"changed at the source, not carried to the target: {exc}"
            with self.store.transaction():  # the base left and the problem, together
                if isinstance(exc, Conflicted):
                    self.store.written.keep(row.entity, row.source_id, exc.written)
                problems.record(kept, row.source_id, why, parent=row.parent)
            self.stats.refresh_failed += 1
            return
        with self.store.transaction():
            if written is not None:
                self.store.written.keep(row.entity, row.source_id, written)
            # what the plan hashed (`Planned.content_hash`), as `done` keeps it
            self.ledger.refreshed(row.entity, row.source_id, row.staged_hash or record.content_hash)
        problems.clear(kept, row.source_id)
        self.stats.refreshed += 1
        log.info("record_refreshed", entity=row.entity, record=row.source_id)

    async def _relocate(
        self, spec: EntitySpec, row: LedgerRow, record: StagedRecord, target_id: str
    ) -> str:
        """Where the record lives in the target now (moved there first): a new target id is
        committed at once, so a refresh failing or killed after the move leaves the ledger
        naming where the record is."""
        assert spec.relocate is not None
        now = await spec.relocate(record, target_id)
        if now != target_id:
            self.ledger.retarget(row.entity, row.source_id, now)
        return now

    # -- one record, exactly once -------------------------------------------------------------

    async def _apply(
        self, spec: EntitySpec, row: LedgerRow, parent_target: str | None, parent_found: bool
    ) -> str | None:
        """Load one record exactly once; its target id when it is in the target, else None.
        Looked for first where the target may hold it already: a spec that reuses what is
        there (`find_first`), or a record under a parent found there (a lost store's rerun)."""
        if row.status == "done":
            return row.target_id
        if row.status in ("failed", "waiting"):
            return None
        record = self._record(spec, row)
        if record is None:
            return self._fail(
                row, RecordFailure(f"{row.entity} {row.source_id} is no longer staged")
            )
        look_first = spec.find_first or parent_found
        if look_first and (found := await self._find(spec, record, parent_target)):
            return self._done(row, found, found=True)  # the target has it: reused, not sent
        conflict = self._conflicts.get(Ref(row.entity, row.source_id))
        if conflict is not None and not spec.sends_conflicts:
            return await self._planned_conflict(spec, row, record, parent_target, conflict)
        uncertain = ""  # the last uncertain write's error: the failure names it
        for _ in range(MAX_AMBIGUOUS):
            self.ledger.begin(row.entity, row.source_id)
            try:
                sent = await spec.send(record, parent_target)
            except (AmbiguousWriteError, ConflictError) as exc:
                self.stats.ambiguous += isinstance(exc, AmbiguousWriteError)
                found = await self._find(spec, record, parent_target)
                log.warning(
                    "write_uncertain",
                    entity=row.entity,
                    record=row.source_id,
                    error=str(exc),
                    found=bool(found),
                )
                if found:  # after a conflict, the target held it before this write
                    return self._done(row, found, found=isinstance(exc, ConflictError))
                if isinstance(exc, ConflictError):
                    self._block(row, str(exc))
                    return self._fail(row, exc)
                self.ledger.release(row.entity, row.source_id)
                uncertain = str(exc)
                continue
            except (RecordError, RecordFailure) as exc:
                return self._fail(row, exc)
            except RecordWaiting as exc:
                self._wait(row, exc)
                return None
            return self._sent(row, sent)
        return self._fail(
            row,
            RecordFailure(
                f"the write's outcome stayed uncertain; the target does not show it: {uncertain}"
            ),
        )

    async def _planned_conflict(
        self, spec: EntitySpec, row: LedgerRow, record: StagedRecord, parent: str | None, why: str
    ) -> str | None:
        """A record the plan found in conflict: done if the target now holds it as ours, else
        failed with the plan's reason, unsent (exactly once: nothing was written)."""
        if found := await self._find(spec, record, parent):
            return self._done(row, found, found=True)
        self._block(row, why)
        return self._fail(
            row,
            PlannedConflict(
                f"{why} (found by haul plan: free the key or map it elsewhere, or carry a record"
                " over a target limit another way; run haul plan again, then haul load"
                " --retry-failed)"
            ),
        )

    def _block(self, row: LedgerRow, why: str) -> None:
        ref = Ref(row.entity, row.source_id)
        self._blocked[ref] = f"{ref}{BLOCKED}{why}"

    async def _find(
        self, spec: EntitySpec, record: StagedRecord, parent_target: str | None
    ) -> Sent | None:
        """What the spec's find answered, as `Sent` (a find may settle rows as a send does)."""

        def unclaimed(target_id: str) -> bool:
            return not self.ledger.is_claimed(spec.claim_group, target_id)

        found = await spec.find(record, parent_target, unclaimed)
        if not found:
            return None
        return found if isinstance(found, Sent) else Sent(found)

    def _record(self, spec: EntitySpec, row: LedgerRow) -> StagedRecord | None:
        return self.store.get_record(spec.staged, row.source_id)

    def _parent_target(self, row: LedgerRow) -> str | None:
        if not row.parent_entity:
            return None
        return self.ledger.target_id(row.parent_entity, row.parent or "")

    def _sent(self, row: LedgerRow, sent: str | Sent) -> str:
        """Record the row done, and what its send settled or forgot as well."""
        return self._done(row, Sent(sent) if isinstance(sent, str) else sent)

    def _done(self, row: LedgerRow, sent: Sent, *, found: bool = False) -> str:
        """Record the row done; `found`: the target held it before this store sent it."""
        target_id = sent.target_id
        self._record_done(row, sent, found=found)
        if found and row.entity in self._parents:  # its children look before they are made
            self._found_now.add(Ref(row.entity, row.source_id))
        if found and not self._specs[row.entity].find_first:  # not an object merely reused
            self._org_found = True
        self.stats.done += 1
        self.progress.advance(self._task)
        return target_id

    def _record_done(self, row: LedgerRow, sent: Sent, *, found: bool = False) -> None:
        """The row done, with the rows its send or find settled and forgot: in one
        transaction when there are any (else one statement, committed on its own)."""
        if not sent.settled and not sent.forgotten and sent.written is None:
            self.ledger.done(row.entity, row.source_id, sent.target_id, found=found)
            return
        with self.store.transaction():
            self.ledger.done(row.entity, row.source_id, sent.target_id, found=found)
            if sent.written is not None:
                self.store.written.keep(row.entity, row.source_id, sent.written)
            settle(self.ledger, sent.settled)
            forget(self.ledger, sent.forgotten)

    def _fail(self, row: LedgerRow, exc: BaseException) -> str | None:
        self.ledger.fail(row.entity, row.source_id, f"{type(exc).__name__}: {exc}")
        self.stats.failed += 1
        log.warning("record_failed", entity=row.entity, record=row.source_id, error=str(exc))
        return None

    def _wait(self, row: LedgerRow, exc: RecordWaiting) -> None:
        """The row waits for a record a later run brings in; what hangs under it fails below
        it, as under any record not loaded."""
        self.ledger.wait(row.entity, row.source_id, str(exc))
        self.stats.waiting += 1
        log.info("record_waiting", entity=row.entity, record=row.source_id, reason=str(exc))

    def _fail_pending(self, row: LedgerRow, reason: str) -> None:
        current = self.ledger.get(row.entity, row.source_id)
        if current is not None and current.status in ("pending", "in_flight"):
            self.ledger.fail(row.entity, row.source_id, reason)
            self.stats.failed += 1

    def _fail_subtree(self, row: LedgerRow, reason: str, seen: set[Ref] | None = None) -> None:
        self._fail_pending(row, reason)
        blocked = BLOCKED in reason  # what a conflict blocks, it blocks all the way down
        below = reason if blocked else f"{row.entity} {row.source_id} was not loaded"
        self._fail_below(row, below, seen)

    def _fail_below(self, row: LedgerRow, reason: str, seen: set[Ref] | None = None) -> None:
        """Fail what waits below a record that did not load; deferred phases judge for
        themselves. `seen`: rows already failed here (a cycle's, which would lead back)."""
        for child in self._children(row):
            ref = Ref(child.entity, child.source_id)
            if seen is not None and ref in seen:
                continue
            if seen is not None:
                seen.add(ref)
            self._fail_subtree(child, reason, seen)


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


def resend_what_shows(
    store: StagingStore,
    specs: Sequence[EntitySpec],
    apart: Callable[[Ref, list[Ref]], bool] = lambda record, shown: bool(shown),
) -> int:
    """Mark changed every loaded record of `specs` whose text shows others `apart` from it (by
    default: any), in one transaction; how many. Its refresh reads the target and writes it
    again only where the store now knows more of what it shows (a sharded migration's union
    holds the files another part loaded than the text's)."""
    marked = 0
    with store.transaction():
        for spec in specs:
            if spec.shows is None or spec.refresh is None:
                continue
            done = [
                row.source_id for row in store.ledger.iter_rows(entity=spec.name, status="done")
            ]
            for source_id in done:
                record = store.get_record(spec.staged, source_id)
                if record is not None and apart(Ref(spec.staged, source_id), [*spec.shows(record)]):
                    store.ledger.resend(spec.name, source_id)
                    marked += 1
    return marked


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
    """Bring the ledger up to date with what is staged, one transaction; return the new rows.

    Run after every extract, so that counts and status are aggregate queries on the ledger.
    """
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


# -- haul undo: its ledger moves (pipelines.undo sends the deletions) ---------------------------


def begin_undo(ledger: Ledger, row: LedgerRow) -> None:
    """Mark a loaded row's record as being taken back: committed before its DELETE is sent,
    so a crash after the send leaves a row the next undo sends again (a 404 settles it)."""
    ledger.undo_begin(row.entity, row.source_id)


def record_undone(
    ledger: Ledger, row: LedgerRow, how: str, recovery_token: str | None = None
) -> None:
    """Record that the row's record left the target (`how`: deleted, gone, with_parent)."""
    ledger.undone(row.entity, row.source_id, how, recovery_token)
