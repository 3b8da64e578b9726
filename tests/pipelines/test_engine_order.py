"""The load engine over fake specs: a real staging store, no sandbox, no HTTP.

Each fake spec writes into an in-memory target (a list of sends) so a test can read the order
the engine sent records in, what it found again after a crash, and what it failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from haul.connectors.errors import ConflictError
from haul.pipelines.engine import LoadEngine, plan_ledger, retry_failed_rows
from haul.pipelines.specs import (
    EntitySpec,
    Forgotten,
    Order,
    Phase,
    Planned,
    RecordFailure,
    Ref,
    Renamed,
    Sent,
    Settled,
    each_record,
)
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


@dataclass
class FakeTarget:
    """What the fake specs wrote: (entity, source id, parent target id) in send order."""

    sent: list[tuple[str, str, str | None]] = field(default_factory=list)
    held: dict[tuple[str, str], str] = field(default_factory=dict)  # (entity, source id) -> id
    refuse: set[str] = field(default_factory=set)
    unique: set[str] = field(default_factory=set)  # entities the target refuses twice (409)

    def spec(
        self,
        name: str,
        *,
        parent: str | None = None,
        phase: Phase = Phase.TREES,
        requires: Callable[[StagedRecord], list[Ref]] | None = None,
    ) -> EntitySpec:
        """A spec of `name` whose records hang under `parent` records (by their `parent`)."""

        async def send(record: StagedRecord, parent_target: str | None) -> str:
            if record.source_id in self.refuse:
                raise RecordFailure(f"the target refuses {record.source_id}")
            if name in self.unique and (name, record.source_id) in self.held:
                raise ConflictError(f"{name} {record.source_id} exists", service="fake")
            target_id = f"t-{name}-{record.source_id}"
            self.sent.append((name, record.source_id, parent_target))
            self.held[name, record.source_id] = target_id
            return target_id

        async def find(
            record: StagedRecord, parent_target: str | None, unclaimed: object
        ) -> str | None:
            return self.held.get((name, record.source_id))

        plan = each_record(
            name,
            parent=lambda r: Ref(parent, r.parent) if parent and r.parent else None,
            sort_key=lambda r: r.source_id,
        )
        spec = EntitySpec(name, name, plan, send, find, order=Order(phase))
        return replace(spec, requires=requires) if requires else spec


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StagingStore]:
    with StagingStore.open(tmp_path / "haul.db") as opened:
        yield opened


def stage(store: StagingStore, entity: str, *ids: str, parent: str | None = None) -> None:
    rows = [{"source_id": i, "parent": parent, "updated_at": "t", "raw": {"id": i}} for i in ids]
    store.upsert_records(entity, rows)


def engine(store: StagingStore, specs: list[EntitySpec]) -> LoadEngine:
    load = LoadEngine(store, specs, concurrency=1)
    load.plan()
    return load


DESIGN_LAYERS = (  # DESIGN.md, "Exactly-once loading": the load's layers in their order
    "DICTIONARY_VALUES", "QUEUES_AND_CATEGORIES", "FIELDS", "CONFIGURATION",  # organisation
    "TREES", "LINKS", "PLANNING", "DELETIONS", "PLANNING_LINKS", "AUTOACTIONS",
)  # fmt: skip


def test_the_phases_are_designs_layers_in_designs_order() -> None:
    """The organisation as configured (dictionary values, then queues and field categories,
    then fields, then the rest), the trees, the links, the planning layer and its links, the
    autoactions last; the deletions a sync mirrors after the planning layer, in a phase of
    their own (printed as DELETIONS, never as another phase's name)."""
    assert tuple(phase.name for phase in sorted(Phase)) == DESIGN_LAYERS
    assert len({phase.value for phase in Phase}) == len(Phase), "no phase is an alias"


async def test_phases_load_lowest_first_and_trees_depth_first(store: StagingStore) -> None:
    """Organisation objects before every tree, a tree's children right after their parent,
    and a link only once the trees are through."""
    target = FakeTarget()
    stage(store, "component", "c1", "c2")
    stage(store, "issue", "i1", "i2")
    stage(store, "comment", "m1", parent="i1")
    stage(store, "comment", "m2", parent="i2")
    stage(store, "link", "l1", parent="i1")
    specs = [
        target.spec("issue"),
        target.spec("comment", parent="issue"),
        target.spec("link", parent="issue", phase=Phase.LINKS),
        target.spec("component", phase=Phase.CONFIGURATION),
    ]
    await engine(store, specs).run()
    order = [(entity, source_id) for entity, source_id, _ in target.sent]
    assert order == [
        ("component", "c1"),
        ("component", "c2"),
        ("issue", "i1"),
        ("comment", "m1"),
        ("issue", "i2"),
        ("comment", "m2"),
        ("link", "l1"),
    ]
    assert ("comment", "m1", "t-issue-i1") in target.sent  # children get the parent's target id


async def test_a_record_waits_for_what_it_requires_in_an_earlier_phase(
    store: StagingStore,
) -> None:
    """`requires` is honoured in the trees too: an issue that needs a component the target
    refused fails, naming it, and so does its comment; the other issue loads."""
    target = FakeTarget(refuse={"c1"})
    stage(store, "component", "c1", "c2")
    stage(store, "issue", "i1", "i2")
    stage(store, "comment", "m1", parent="i1")
    uses = {"i1": "c1", "i2": "c2"}
    specs = [
        target.spec("issue", requires=lambda r: [Ref("component", uses[r.source_id])]),
        target.spec("comment", parent="issue"),
        target.spec("component", phase=Phase.CONFIGURATION),
    ]
    stats = await engine(store, specs).run()
    assert [source_id for _, source_id, _ in target.sent] == ["c2", "i2"]
    assert stats.failed == 3
    issue = store.ledger.get("issue", "i1")
    assert issue is not None and issue.status == "failed"
    assert issue.error == "component c1 was not loaded, so the issue cannot be made"
    comment = store.ledger.get("comment", "m1")
    assert comment is not None and comment.error == "issue i1 was not loaded"


async def test_a_phase_that_names_its_needs_starts_beside_the_last_trees(
    store: StagingStore,
) -> None:
    """Links name all they need of the trees (their issue, the other end): their phase starts
    while a tree waits (a 429's Retry-After, say), and only the links that need that tree wait
    for it. A link whose other end then fails, fails naming it. A phase that does not name its
    needs (deletions) still waits for every tree."""
    target = FakeTarget(refuse={"i3"})
    slow_issue = asyncio.Event()
    stage(store, "issue", "i1", "i2", "i3")
    stage(store, "link", "l1", parent="i1")  # i1 -> i2, both quick
    stage(store, "link", "l2", parent="i1")  # i1 -> i3, refused
    stage(store, "link", "l3", parent="i2")  # i2 -> i1
    stage(store, "deletion", "d1")
    ends = {"l1": "i2", "l2": "i3", "l3": "i1"}
    issue = target.spec("issue")

    async def send_issue(record: StagedRecord, parent_target: str | None) -> str | Sent:
        if record.source_id == "i3":  # waits until a link has gone: the links did not wait
            await asyncio.wait_for(slow_issue.wait(), 10)
        return await issue.send(record, parent_target)

    link = target.spec("link", parent="issue", phase=Phase.LINKS,
                       requires=lambda r: [Ref("issue", ends[r.source_id])])  # fmt: skip

    async def send_link(record: StagedRecord, parent_target: str | None) -> str | Sent:
        target_id = await link.send(record, parent_target)
        slow_issue.set()
        return target_id

    specs = [
        replace(issue, send=send_issue),
        replace(link, send=send_link, order=Order(Phase.LINKS, needs_named=True)),
        target.spec("deletion", phase=Phase.DELETIONS),
    ]
    load = LoadEngine(store, specs, concurrency=4)
    load.plan()
    stats = await load.run()
    order = [source_id for _, source_id, _ in target.sent]
    assert set(order[:4]) == {"i1", "i2", "l1", "l3"} and order[-1] == "d1"
    assert order.index("l1") < order.index("d1") and "i3" not in order
    failed = store.ledger.get("link", "l2")
    assert failed is not None and failed.status == "failed"
    assert failed.error == "issue i3 was not loaded, so the link cannot be made"
    assert stats.done == 5 and stats.failed == 2


async def test_a_link_waits_for_the_refresh_of_an_end_that_changed_at_the_source(
    store: StagingStore,
) -> None:
    """An issue loaded earlier and changed at the source since is done but not yet up to
    date: a link that needs it waits until its refresh has run (the target checks a link's
    time against both issues' windows, which the refresh moves), not only until it is done."""
    target = FakeTarget()
    refreshing = asyncio.Event()
    issue = target.spec("issue")

    async def refresh(record: StagedRecord, target_id: str) -> None:
        refreshing.set()
        await asyncio.sleep(0.05)  # a slow edit: the link's phase is under way meanwhile
        target.sent.append(("refresh", record.source_id, target_id))

    link = target.spec("link", parent="issue", phase=Phase.LINKS,
                       requires=lambda r: [Ref("issue", "i1")])  # fmt: skip

    async def send_link(record: StagedRecord, parent_target: str | None) -> str | Sent:
        await asyncio.wait_for(refreshing.wait(), 10)  # sent only once the refresh began
        return await link.send(record, parent_target)

    specs = [
        replace(issue, refresh=refresh),
        replace(link, send=send_link, order=Order(Phase.LINKS, needs_named=True)),
    ]
    stage(store, "issue", "i1", "i2")
    await engine(store, specs).run()
    store.upsert_records("issue", [{"source_id": "i1", "updated_at": "u", "raw": {"id": "x"}}])
    stage(store, "link", "l1", parent="i2")

    load = LoadEngine(store, specs, concurrency=4)
    load.plan()
    await load.run()

    order = [(entity, source_id) for entity, source_id, _ in target.sent]
    assert order.index(("refresh", "i1")) < order.index(("link", "l1"))


async def test_in_flight_rows_are_reconciled_before_anything_is_sent(store: StagingStore) -> None:
    """A row a killed run left in flight is done when the target has it (no second send) and
    sent again when it does not."""
    target = FakeTarget()
    stage(store, "issue", "i1", "i2")
    specs = [target.spec("issue")]
    load = engine(store, specs)
    store.ledger.begin("issue", "i1")  # the send reached the target, the reply was lost
    target.held["issue", "i1"] = "t-issue-i1"
    store.ledger.begin("issue", "i2")  # killed before the send
    stats = await load.run()
    assert (stats.reconciled_found, stats.reconciled_missing) == (1, 1)
    assert [source_id for _, source_id, _ in target.sent] == ["i2"]
    assert {row.status for row in store.ledger.iter_rows(entity="issue")} == {"done"}


async def test_the_stop_flag_starts_no_new_tree(store: StagingStore) -> None:
    """Once stop is asked, the tree under way finishes and no other starts; the rest stays
    pending for the next run."""
    target = FakeTarget()
    stage(store, "issue", "i1", "i2", "i3")
    stage(store, "comment", "m1", parent="i1")
    load = engine(store, [target.spec("issue"), target.spec("comment", parent="issue")])
    load.stop_requested = lambda: bool(target.sent)
    await load.run()
    assert [source_id for _, source_id, _ in target.sent] == ["i1", "m1"]
    pending = [row.source_id for row in store.ledger.iter_rows(status="pending")]
    assert pending == ["i2", "i3"]


async def test_children_beside_earlier_ones_do_not_wait_for_them(store: StagingStore) -> None:
    """A page's subpage subtree and its file load at once when the file's spec loads
    `beside_earlier` (the subpage's send waits until the file is in); its access, a spec
    without it, still loads before both."""
    target = FakeTarget()
    file_sent = asyncio.Event()
    stage(store, "page", "p1")
    stage(store, "access", "a1", parent="p1")
    stage(store, "page_child", "p2", parent="p1")
    stage(store, "file", "f1", parent="p1")
    subpage, file = target.spec("page_child", parent="page"), target.spec("file", parent="page")

    async def send_subpage(record: StagedRecord, parent_target: str | None) -> str | Sent:
        await asyncio.wait_for(file_sent.wait(), 10)  # the file must not wait for this subtree
        return await subpage.send(record, parent_target)

    async def send_file(record: StagedRecord, parent_target: str | None) -> str | Sent:
        target_id = await file.send(record, parent_target)
        file_sent.set()
        return target_id

    specs = [
        target.spec("page"),
        target.spec("access", parent="page"),
        replace(subpage, send=send_subpage),
        replace(file, send=send_file, order=Order(beside_earlier=True)),
    ]
    stats = await engine(store, specs).run()
    assert stats.done == 4
    order = [(entity, source_id) for entity, source_id, _ in target.sent]
    assert order == [("page", "p1"), ("access", "a1"), ("file", "f1"), ("page_child", "p2")]


async def test_a_change_the_target_refuses_is_a_problem_until_a_later_load_carries_it(
    store: StagingStore,
) -> None:
    """A loaded record whose refresh fails stays done and changed, and is kept as a problem
    (`haul failures`, exit 3) until a later load carries the change, which clears it."""
    target = FakeTarget()
    refused: list[str] = []

    async def refresh(record: StagedRecord, target_id: str) -> None:
        if refused:
            raise RecordFailure(f"the target refuses {target_id}: {refused[0]}")
        target.sent.append(("refresh", record.source_id, target_id))

    spec = replace(target.spec("page"), refresh=refresh)
    stage(store, "page", "a", "b")
    await engine(store, [spec]).run()
    store.upsert_records("page", [{"source_id": "a", "updated_at": "u", "raw": {"id": "a2"}}])
    refused.append("a holder maps to no one")

    failing = engine(store, [spec])
    stats = await failing.run()

    (problem,) = list(store.problems)
    assert (problem.entity, problem.source_id) == ("page:change", "a")
    assert "a holder maps to no one" in problem.error and stats.refresh_failed == 1
    assert [row.source_id for row in store.ledger.iter_changed("page")] == ["a"]
    refused.clear()

    await engine(store, [spec]).run()

    assert list(store.problems) == []
    assert ("refresh", "a", "t-page-a") in target.sent
    assert list(store.ledger.iter_changed("page")) == []


async def test_children_load_under_the_target_id_a_refresh_moved_their_parent_to(
    store: StagingStore,
) -> None:
    """A refresh that moves its record in the target first (`relocate`: an issue moved to
    another queue takes a new key) has the engine record the new target id, refresh the
    record there and hand it to the children loading under it."""
    target = FakeTarget()

    async def relocate(record: StagedRecord, target_id: str) -> str:
        target.sent.append(("move", record.source_id, target_id))
        return "t-issue-moved"

    async def refresh(record: StagedRecord, target_id: str) -> None:
        target.sent.append(("refresh", record.source_id, target_id))

    issue = replace(target.spec("issue"), refresh=refresh, relocate=relocate)
    specs = [issue, target.spec("comment", parent="issue")]
    stage(store, "issue", "a")
    await engine(store, specs).run()
    store.upsert_records("issue", [{"source_id": "a", "updated_at": "u", "raw": {"id": "a2"}}])
    stage(store, "comment", "c1", parent="a")

    await engine(store, specs).run()

    assert target.sent[-3:] == [
        ("move", "a", "t-issue-a"),
        ("refresh", "a", "t-issue-moved"),
        ("comment", "c1", "t-issue-moved"),
    ]
    assert row(store, "issue", "a").target_id == "t-issue-moved"
    assert list(store.ledger.iter_changed("issue")) == []


async def test_a_relocation_stays_recorded_when_the_refresh_after_it_fails(
    store: StagingStore,
) -> None:
    """The engine commits a record's new target id as soon as `relocate` returns it: a refresh
    that fails after the move (a problem kept, the row still changed) leaves the ledger naming
    where the record is, and the children load there; the next load relocates from there."""
    target = FakeTarget()
    relocated_from: list[str] = []

    async def relocate(record: StagedRecord, target_id: str) -> str:
        relocated_from.append(target_id)
        return "t-issue-moved"

    async def refresh(record: StagedRecord, target_id: str) -> None:
        raise RecordFailure("the edit was refused")

    issue = replace(target.spec("issue"), refresh=refresh, relocate=relocate)
    specs = [issue, target.spec("comment", parent="issue")]
    stage(store, "issue", "a")
    await engine(store, specs).run()
    store.upsert_records("issue", [{"source_id": "a", "updated_at": "u", "raw": {"id": "a2"}}])
    stage(store, "comment", "c1", parent="a")

    stats = await engine(store, specs).run()

    assert stats.refresh_failed == 1
    assert row(store, "issue", "a").target_id == "t-issue-moved"
    assert [change.source_id for change in store.ledger.iter_changed("issue")] == ["a"]
    assert target.sent[-1] == ("comment", "c1", "t-issue-moved")
    await engine(store, specs).run()
    assert relocated_from == ["t-issue-a", "t-issue-moved"]


async def test_a_cycle_of_parents_fails_its_records_named_and_the_rest_loads(
    store: StagingStore,
) -> None:
    """Two records each other's parent, and one its own: each fails naming its cycle, what
    hangs under them fails as not loaded, and every other tree loads."""
    target = FakeTarget()
    stage(store, "goal", "g1", parent="g2")
    stage(store, "goal", "g2", parent="g1")
    stage(store, "goal", "g3", parent="g3")
    stage(store, "goal", "g4", parent="g1")
    stage(store, "goal", "g5")
    stage(store, "goal", "g6", parent="g5")
    load = engine(store, [target.spec("goal", parent="goal")])

    stats = await load.run()

    ledger = store.ledger
    for goal in ("g1", "g2"):
        assert "parent cycle: goal g1 -> g2 -> g1" in (ledger.get("goal", goal).error or "")  # type: ignore[union-attr]
    assert "parent cycle: goal g3 -> g3" in (ledger.get("goal", "g3").error or "")  # type: ignore[union-attr]
    assert ledger.get("goal", "g4").error == "goal g1 was not loaded"  # type: ignore[union-attr]
    assert [sent for _, sent, _ in target.sent] == ["g5", "g6"]
    assert (stats.done, stats.failed) == (2, 4)


async def test_under_a_record_found_in_the_target_each_record_is_looked_for_first(
    store: StagingStore,
) -> None:
    """A rerun with a lost store: the issue the target already holds is found (its send
    conflicts), and each comment under it is looked for before it is sent, so the one the
    target holds is not made twice; under an issue this load made, nothing is looked for."""
    target = FakeTarget(unique={"issue"})
    target.held["issue", "i1"] = "t-issue-i1"  # made by the run whose store was lost
    target.held["comment", "c1"] = "t-comment-c1"
    stage(store, "issue", "i1", "i2")
    stage(store, "comment", "c1", "c2", parent="i1")
    stage(store, "comment", "c3", parent="i2")
    load = engine(store, [target.spec("issue"), target.spec("comment", parent="issue")])

    await load.run()

    assert [(entity, sent) for entity, sent, _ in target.sent] == [
        ("comment", "c2"),
        ("issue", "i2"),
        ("comment", "c3"),
    ]
    assert store.ledger.get("issue", "i1").found  # type: ignore[union-attr]
    assert store.ledger.get("comment", "c1").target_id == "t-comment-c1"  # type: ignore[union-attr]
    assert not store.ledger.get("issue", "i2").found  # type: ignore[union-attr]


async def test_once_the_target_shows_a_lost_store_roots_are_looked_for_too(
    store: StagingStore,
) -> None:
    """A record the target held before this store sent it (an issue found by its `unique`)
    tells that an earlier run's store was lost: a root of a later phase (a goal) is then
    looked for before it is made, in this load and the next."""
    target = FakeTarget(unique={"issue"})
    target.held["issue", "i1"] = "t-issue-i1"
    target.held["goal", "g1"] = "t-goal-g1"
    stage(store, "issue", "i1")
    stage(store, "goal", "g1", "g2")
    specs = [target.spec("issue"), target.spec("goal", phase=Phase.PLANNING)]

    await engine(store, specs).run()

    assert [(entity, sent) for entity, sent, _ in target.sent] == [("goal", "g2")]
    assert store.ledger.get("goal", "g1").target_id == "t-goal-g1"  # type: ignore[union-attr]


def row(store: StagingStore, entity: str, source_id: str) -> LedgerRow:
    found = store.ledger.get(entity, source_id)
    assert found is not None, f"{entity} {source_id} is not in the ledger"
    return found


async def test_what_a_plan_settles_the_engine_records_done_unsent(store: StagingStore) -> None:
    """A plan names rows that need no send (`Settled`): one the ledger lacks is planned and
    recorded done, one planned before is recorded done, one loaded before keeps its id."""
    target = FakeTarget()
    stage(store, "status", "s1", "s2", "s3", "s4")
    engine(store, [target.spec("status")])  # s1 .. s4 pending
    store.ledger.done("status", "s3", "t-status-s3")
    stage(store, "status", "s5", "s6")
    held = each_record("status")

    def plan(staged: StagingStore) -> Iterator[Planned | Settled]:
        for item in held(staged):
            source_id = item.record.source_id
            if source_id in ("s2", "s3"):
                yield Settled(Ref("status", source_id), "replaced")
            elif source_id == "s5":
                yield Settled(Ref("status", source_id), "carried", item)
            else:
                yield item

    load = LoadEngine(store, [replace(target.spec("status"), plan=plan)], concurrency=1)
    assert load.plan() == 2  # s5, settled, and s6, to send
    await load.run()

    assert [source_id for _, source_id, _ in target.sent] == ["s1", "s4", "s6"]
    outcomes = {s: (row(store, "status", s).status, row(store, "status", s).target_id)
                for s in ("s2", "s3", "s5")}  # fmt: skip
    assert outcomes == {
        "s2": ("done", "replaced"),
        "s3": ("done", "t-status-s3"),
        "s5": ("done", "carried"),
    }


async def test_what_a_send_settles_the_engine_records_beside_its_row(store: StagingStore) -> None:
    """A send that wrote more than its own record (an issue's import carries its status)
    returns `Sent`: the engine records its row done under the target id, then each settled
    row done, planned under the issue; none of them is sent, nor counted as loaded."""
    target = FakeTarget()
    stage(store, "issue", "i1")
    stage(store, "status", "st1", parent="i1")
    issue = target.spec("issue")

    async def import_issue(record: StagedRecord, parent_target: str | None) -> str | Sent:
        target_id = await issue.send(record, parent_target)
        status = store.get_record("status", "st1")
        assert status is not None
        carried = Settled(Ref("status", "st1"), "carried", Planned(status, Ref("issue", "i1")))
        return Sent(str(target_id), (carried,))

    no_plan = replace(target.spec("status", parent="issue"), plan=lambda staged: iter(()))
    stats = await engine(store, [replace(issue, send=import_issue), no_plan]).run()

    assert [source_id for _, source_id, _ in target.sent] == ["i1"]
    assert stats.done == 1
    assert row(store, "issue", "i1").target_id == "t-issue-i1"
    status = row(store, "status", "st1")
    assert (status.status, status.target_id, status.parent) == ("done", "carried", "i1")


async def test_retrying_puts_every_failed_row_back_and_the_next_run_sends_it(
    store: StagingStore,
) -> None:
    """`haul load --retry-failed`: the engine moves each failed row back to pending (counted),
    the next run sends it; a done row stays as it is."""
    target = FakeTarget(refuse={"a", "b"})
    stage(store, "page", "a", "b", "c")
    await engine(store, [target.spec("page")]).run()
    target.refuse.clear()

    assert retry_failed_rows(store) == 2
    assert retry_failed_rows(store) == 0
    await LoadEngine(store, [target.spec("page")], concurrency=1).run()

    assert [source_id for _, source_id, _ in target.sent] == ["c", "a", "b"]
    assert {row(store, "page", s).status for s in ("a", "b", "c")} == {"done"}


async def test_what_a_plan_renames_the_engine_renames_before_the_plan_reads_on(
    store: StagingStore,
) -> None:
    """A plan yields `Renamed` for a record renamed at the source (an issue moved to another
    queue): the engine keys its rows, and those keyed under it, anew at once, so the plan's
    next read sees them renamed and the rows the plans after it keep their load (nothing is
    sent again)."""
    target = FakeTarget()
    specs = [target.spec("issue"), target.spec("comment", parent="issue")]
    stage(store, "issue", "A-1")
    stage(store, "comment", "A-1/c1", parent="A-1")
    await engine(store, specs).run()
    store.delete_record("issue", "A-1")
    store.delete_under("A-1")
    stage(store, "issue", "B-1")
    stage(store, "comment", "B-1/c1", parent="B-1")
    seen: list[bool] = []

    def follow(staged: StagingStore) -> Iterator[Renamed]:
        yield Renamed(("issue",), "A-1", "B-1", under=("comment",), parents=True)
        seen.append(staged.ledger.get("issue", "B-1") is not None)

    plans = {"issue_move": follow, **{spec.name: spec.plan for spec in specs}}
    assert plan_ledger(store, plans) == 0
    await LoadEngine(store, specs, concurrency=1).run()

    assert seen == [True]
    assert len(target.sent) == 2  # the first load's
    assert store.ledger.get("issue", "A-1") is None
    assert row(store, "issue", "B-1").target_id == "t-issue-A-1"
    comment = row(store, "comment", "B-1/c1")
    assert (comment.status, comment.parent, comment.target_id) == (
        "done",
        "B-1",
        "t-comment-A-1/c1",
    )


def test_a_rename_is_undone_with_the_plan_it_was_yielded_in(store: StagingStore) -> None:
    """The engine renames in the plan's transaction: a plan that fails after yielding a
    rename leaves the rows under their old key (the rename commits with what it belongs to)."""
    stage(store, "issue", "A-1")
    LoadEngine(store, [FakeTarget().spec("issue")], concurrency=1).plan()

    def follow(staged: StagingStore) -> Iterator[Renamed]:
        yield Renamed(("issue",), "A-1", "B-1")
        raise RuntimeError("killed while planning")

    with pytest.raises(RuntimeError):
        plan_ledger(store, {"issue_move": follow})

    assert row(store, "issue", "A-1").status == "pending"
    assert store.ledger.get("issue", "B-1") is None


def deletion_spec(answer: Sent, *, held: bool) -> EntitySpec:
    """A `deletion` spec whose send deletes page p1 in the target, and whose find answers it
    deleted unless the target still holds it; either answer forgets p1's rows."""

    async def send(record: StagedRecord, parent_target: str | None) -> str | Sent:
        return answer

    async def find(
        record: StagedRecord, parent_target: str | None, unclaimed: object
    ) -> Sent | None:
        return None if held else answer

    return EntitySpec("deletion", "deletion", each_record("deletion"), send, find,
                      order=Order(Phase.DELETIONS))  # fmt: skip


def staged_page_with_file(store: StagingStore) -> list[EntitySpec]:
    target = FakeTarget()
    specs = [target.spec("page"), target.spec("file", parent="page")]
    stage(store, "page", "p1", "p2")
    stage(store, "file", "p1/f1", parent="p1")
    return specs


FORGET_P1 = Sent("deleted t-page-p1", forgotten=(Forgotten(("page",), "p1", children=("file",)),))


async def test_what_a_send_forgets_the_engine_drops_with_its_row(store: StagingStore) -> None:
    """A send that deleted a record in the target on purpose (a sync mirroring a deletion)
    returns `Sent` with what it made obsolete: the engine records its row done and drops the
    deleted record's rows, and those under it; the rest stays."""
    specs = staged_page_with_file(store)
    await engine(store, specs).run()
    stage(store, "deletion", "page:p1")

    stats = await engine(store, [*specs, deletion_spec(FORGET_P1, held=True)]).run()

    assert stats.done == 1
    assert row(store, "deletion", "page:p1").target_id == "deleted t-page-p1"
    assert store.ledger.get("page", "p1") is None
    assert store.ledger.get("file", "p1/f1") is None
    assert row(store, "page", "p2").status == "done"


async def test_what_a_find_forgets_the_engine_drops_when_it_reconciles(store: StagingStore) -> None:
    """A deletion killed after its DELETE (its row left in flight) is found done by its find,
    which answers `Sent` too: the engine records the row done and drops the deleted record's
    rows, as the send would have."""
    specs = staged_page_with_file(store)
    await engine(store, specs).run()
    stage(store, "deletion", "page:p1")
    load = engine(store, [*specs, deletion_spec(FORGET_P1, held=False)])
    store.ledger.begin("deletion", "page:p1")

    stats = await load.run()

    assert (stats.reconciled_found, stats.done) == (1, 0)
    assert row(store, "deletion", "page:p1").status == "done"
    assert store.ledger.get("page", "p1") is None
    assert store.ledger.get("file", "p1/f1") is None
