"""The walk: which record loads when, over phases, trees and waves of siblings.

    LoadEngine(store, specs).plan()  -> new ledger rows (what is staged, planned)
    LoadEngine(store, specs).run()   -> LoadStats, after every phase's trees are through

The ledger is the plan: each row names the node it loads under. The engine loads in phases,
in `Phase` order (the organisation objects, the trees, what needs both ends, ...): in each, the
trees of that phase's specs, a root (a row whose parent is of an earlier phase, or none) then
its children in spec order and, among siblings, in `sort_key` order (or all at once where the
spec's `Order` allows), depth first (a spec's group of children beside the groups before it
when it loads `beside_earlier`). Independent trees load concurrently. A phase whose specs all
name what they need of the earlier ones (`needs_named`: the links) starts once every earlier
tree is under way, its records each waiting for just those trees. A record whose parent, or
anything it `requires`, is planned but not loaded fails with that reason, and so does what
hangs under it ("... was not loaded"). A cycle of parents (staged from reads taken at
different moments) fails its records, named ("parent cycle: portfolio 12 -> 15 -> 12"). A tree
whose request waits to be sent again (a 429's `Retry-After`) lends its place to the next tree
meanwhile (`concurrency.for_each`'s `lend`). Each record is `RecordLoader`'s; each ledger move
`LedgerWrites`'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import structlog

from haul.pipelines.concurrency import for_each, gather_all
from haul.pipelines.engine.record import RecordLoader, planned_conflicts
from haul.pipelines.engine.trees import Trees
from haul.pipelines.engine.upkeep import plan_ledger
from haul.pipelines.engine.writes import LedgerWrites, LoadStats
from haul.pipelines.progress import Progress
from haul.pipelines.specs import EntitySpec, Phase, Ref
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)


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
        self.ledger = self.store.ledger  # read here; written through `self.writes` alone
        self.writes = LedgerWrites(self.store, self.stats)
        self._specs = {spec.name: spec for spec in self.specs}

    def plan(self) -> int:
        """Put every loadable staged record in the ledger; return how many rows are new."""
        return plan_ledger(self.store, {spec.name: spec.plan for spec in self.specs})

    async def run(self) -> LoadStats:
        """Reconcile what an interrupted run left in flight, then load phase after phase."""
        parents = self.ledger.parent_entities()  # no children query for a leaf's row
        self.trees = Trees(self.ledger, self.specs, self.writes, parents)
        self.one = RecordLoader(
            self.store,
            self._specs,
            self.writes,
            self.progress,
            task="",
            parents=parents,
            conflicts=planned_conflicts(self.store),
            org_found=self.ledger.any_found(s.name for s in self.specs if not s.order.find_first),
        )
        self.wake_waiting()
        await self.reconcile_in_flight()
        self.one.task = self.progress.task("records loaded")
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
        return all(spec.order.needs_named for spec in self.specs if spec.phase == phase)

    async def _load_phase(self, phase: Phase, handed_out: asyncio.Event) -> None:
        def roots() -> Iterator[Ref]:
            yield from self.trees.roots(phase)
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
        earlier = self.trees.phase(ref.entity)
        if earlier is None or earlier >= phase:  # its own phase's trees are not waited on
            return
        row = self.ledger.get(*ref)
        # a done row whose record changed is not settled until its refresh ran: what needs it
        # may depend on what the refresh writes (the target checks a link's time against both
        # issues' windows, which an issue's refresh moves)
        if row is None or row.status == "failed" or (row.status == "done" and not row.changed):
            return
        through = self._under_way.get(self.trees.root_of(row, {}))
        if through is not None:
            await through.wait()

    async def reconcile_in_flight(self) -> None:
        """Settle rows an interrupted run left `in_flight`: done if the target has them."""
        for row in list(self.ledger.iter_rows(status="in_flight")):
            await self.one.reconcile(self._specs[row.entity], row, self._parent_target(row))

    def wake_waiting(self) -> None:
        """Put back to pending each waiting row whose wait may be over: the ledger plans a
        record it `requires` now (this migration brings its other end in)."""
        wake_waiting(self.writes, self._specs)

    # -- loading a tree ---------------------------------------------------------------------

    async def _load_tree(self, root: Ref) -> None:
        if root in self.trees.cycles:
            self.trees.fail_cycle(root)
            return
        row = self.ledger.get(*root)
        if row is None:
            return
        parent_target, parent_found = None, self.one.org_found
        if row.parent_entity:  # a root whose parent is known but not loaded
            parent_ref = Ref(row.parent_entity, row.parent or "")
            await self._settled(parent_ref, self._specs[row.entity].phase)
            parent = self.ledger.get(row.parent_entity, row.parent or "")
            if parent is None or parent.status != "done":
                ref = Ref(row.parent_entity, row.parent or "")
                self.trees.fail_subtree(row, self.one.blocked.get(ref, f"{ref} was not loaded"))
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
            self.trees.fail_subtree(row, missing)
            return
        target_id = await self.one.apply(spec, row, parent_target, parent_found)
        ref = Ref(row.entity, row.source_id)
        found = bool(row.found) if row.status == "done" else ref in self.one.found_now
        self.one.found_now.discard(ref)
        if target_id is None:
            self.trees.fail_below(row, self.one.blocked.get(ref, f"{ref} was not loaded"))
            return
        if spec.refresh is not None and row.changed:
            await self.one.refresh(spec, row, target_id)
            # a refresh may have moved the record (`relocate`: an issue into another queue):
            # its children load under the target id the ledger holds now
            target_id = self.ledger.target_id(row.entity, row.source_id) or target_id
        for wave in self._waves(row):
            await gather_all([self._load_siblings(group, target_id, found) for group in wave])

    def _waves(self, row: LedgerRow) -> list[list[list[LedgerRow]]]:
        """The row's children by spec, in waves: a spec's group joins the wave before it
        when the spec loads `beside_earlier`, else starts a wave of its own."""
        waves: list[list[list[LedgerRow]]] = []
        for entity, group in groupby(self.trees.children(row), key=lambda child: child.entity):
            if waves and self._specs[entity].order.beside_earlier:
                waves[-1].append(list(group))
            else:
                waves.append([list(group)])
        return waves

    async def _load_siblings(
        self, siblings: list[LedgerRow], parent_target: str, parent_found: bool
    ) -> None:
        if self._specs[siblings[0].entity].order.siblings_together and len(siblings) > 1:
            await for_each(
                siblings,
                lambda child: self._load_node(child, parent_target, parent_found),
                self.concurrency,
            )
        else:
            for child in siblings:
                await self._load_node(child, parent_target, parent_found)

    async def _unmet(self, spec: EntitySpec, row: LedgerRow) -> str | None:
        """Why the row cannot load yet: a record it `requires` that is planned and not done
        (requirements load in an earlier phase); None when every one is loaded."""
        if row.status != "pending" or not spec.has_requirements:
            return None
        record = self.one.record(spec, row)
        for ref in spec.requires(record) if record else []:
            await self._settled(ref, spec.phase)
            needed = self.ledger.get(*ref)
            if needed is not None and needed.status != "done":
                return self.one.blocked.get(
                    ref, f"{ref} was not loaded, so the {spec.name} cannot be made"
                )
        return None

    def _parent_target(self, row: LedgerRow) -> str | None:
        if not row.parent_entity:
            return None
        return self.ledger.target_id(row.parent_entity, row.parent or "")


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
