"""`haul undo` through the ledger: each record taken back exactly once, whatever stopped the
last undo. The removals are a small in-memory target (a removal is a contract, as a spec is);
the ledger and the undo are haul's own. The end-to-end kind, with SIGKILLs over the sandbox,
is tests/pipelines/test_undo_crash.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from haul.pipelines.commands.undo import Undoer, plan_undo
from haul.pipelines.engine import begin_undo
from haul.pipelines.specs import RecordFailure
from haul.pipelines.sync.removals import Removal, Removed
from haul.pipelines.tracker.changes.undo import TrackerRemovals
from haul.pipelines.tracker.service import TrackerService
from haul.pipelines.wiki.service import WikiService
from haul.pipelines.wiki.undo import WikiRemovals
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore


class Target:
    """Notes by target id; a deletion answers 404 (gone) for one it does not hold."""

    def __init__(self, *held: str) -> None:
        self.held = set(held)
        self.sent: list[str] = []  # every DELETE, in order
        self.refuse: set[str] = set()  # answered 422

    async def delete(self, row: LedgerRow) -> Removed:
        target_id = row.target_id or ""
        self.sent.append(target_id)
        if target_id in self.refuse:
            raise RecordFailure(f"note {target_id} is locked")
        if target_id not in self.held:
            return Removed(False)
        self.held.discard(target_id)
        return Removed(True, f"token-{target_id}")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StagingStore]:
    with StagingStore.open(tmp_path / "haul.db") as opened:
        yield opened


def loaded(store: StagingStore, entity: str, source_id: str, target_id: str, **row: str) -> None:
    """A ledger row done, as a load leaves it (`found`: the target held it before)."""
    found = row.pop("found", "") == "yes"
    store.ledger.plan([{"entity": entity, "source_id": source_id, "payload_hash": "h", **row}])
    store.ledger.done(entity, source_id, target_id, found=found)


def removals(target: Target) -> dict[str, Removal]:
    return {
        "note": Removal(delete=target.delete),
        "note_access": Removal(with_parent=True),
        "book": Removal(by_hand="the API deletes no book: archive it"),
        "shelf": Removal(delete=target.delete),
    }


def migrated(store: StagingStore) -> Target:
    loaded(store, "book", "B", "b-1")
    for n in (1, 2, 3):
        loaded(store, "note", f"B/{n}", f"n-{n}", parent_entity="book", parent="B")
        loaded(store, "note_access", f"B/{n}", f"n-{n}", parent_entity="note", parent=f"B/{n}")
    loaded(store, "shelf", "S", "s-1", found="yes")  # there before: not ours to delete
    return Target("n-1", "n-2", "n-3", "s-1")


async def undo(store: StagingStore, target: Target) -> Undoer:
    undoer = Undoer(store, removals(target))
    await undoer.run(plan_undo(store, removals(target)))
    return undoer


async def test_a_deletion_a_crash_left_in_flight_is_sent_again_and_settled_as_gone(
    store: StagingStore,
) -> None:
    """Killed after the DELETE of note 2 was sent, before it was recorded: the next undo sends
    it again, finds it gone (404) and records so; the others are deleted once each."""
    target = migrated(store)
    row = store.ledger.get("note", "B/2")
    assert row is not None
    begin_undo(store.ledger, row)
    target.held.discard("n-2")  # the killed undo's DELETE was applied

    undoer = await undo(store, target)

    assert sorted(target.sent) == ["n-1", "n-2", "n-3"]
    assert dict(undoer.result.deleted) == {"note": 2} and dict(undoer.result.gone) == {"note": 1}
    states = {(r.entity, r.source_id): r.undo for r in store.ledger.iter_rows(status="done")}
    assert states[("note", "B/2")] == "gone" and states[("note", "B/1")] == "deleted"
    assert {states[("note_access", f"B/{n}")] for n in (1, 2, 3)} == {"with_parent"}
    assert states[("book", "B")] is None and states[("shelf", "S")] is None
    assert target.held == {"s-1"}


async def test_a_second_undo_sends_nothing_and_keeps_the_tokens(store: StagingStore) -> None:
    """What is undone stays undone: no DELETE again, no refresh of a change at the source; the
    recovery tokens stay in the rows; every row stays done (verify reports each missing)."""
    target = migrated(store)
    await undo(store, target)
    sent = list(target.sent)

    again = await undo(store, target)

    assert target.sent == sent
    assert again.result.deleted == {} and again.result.gone == {}
    note = store.ledger.get("note", "B/1")
    assert note is not None and note.status == "done" and note.undone
    assert note.recovery_token == "token-n-1"
    plan = plan_undo(store, removals(target))
    assert plan.undone_before == 6 and plan.found == 1
    store.ledger.plan([{"entity": "note", "source_id": "B/1", "payload_hash": "changed"}])
    assert list(store.ledger.iter_changed("note")) == []  # nothing to bring up to date
    assert [(kept.row.entity, kept.why) for kept in plan.kept] == [
        ("book", "the API deletes no book: archive it")
    ]


async def test_a_refused_deletion_is_named_and_tried_again_next_time(store: StagingStore) -> None:
    """The target refuses note 3: it stays, named with the reason, and so does its access;
    the next undo tries it again."""
    target = migrated(store)
    target.refuse.add("n-3")

    first = await undo(store, target)
    target.refuse.clear()
    second = await undo(store, target)

    assert [(row.source_id, why) for row, why in first.result.failed] == [
        ("B/3", "note n-3 is locked")
    ]
    assert [row.source_id for row in first.result.kept_with_parent] == ["B/3"]
    assert dict(second.result.deleted) == {"note": 1}
    assert dict(second.result.with_parent) == {"note_access": 1}
    assert target.sent.count("n-3") == 2 and target.held == {"s-1"}


async def test_a_note_a_person_changed_is_kept_and_named_until_changed_ones_are_included(
    store: StagingStore,
) -> None:
    """Note 2 was edited in the target since haul wrote it: undo keeps it (its row loaded, the
    undo a stopped run began on it called off) and names it, with its access; undo told to
    include changed records deletes it, and it is no longer named."""
    target = migrated(store)
    row = store.ledger.get("note", "B/2")
    assert row is not None
    begin_undo(store.ledger, row)  # a stopped undo began it; its DELETE never went through

    async def changed(row: LedgerRow) -> str | None:
        return "a person changed its text" if row.target_id == "n-2" else None

    guarded = {**removals(target), "note": Removal(delete=target.delete, changed=changed)}
    kept = Undoer(store, guarded)
    await kept.run(plan_undo(store, guarded))
    states = {(r.entity, r.source_id): r.undo for r in store.ledger.iter_rows(status="done")}
    named = [(p.entity, p.source_id, p.error) for p in store.problems]
    everything = Undoer(store, guarded, include_changed=True)
    await everything.run(plan_undo(store, guarded))

    assert [(k.row.source_id, k.why) for k in kept.result.changed] == [
        ("B/2", "a person changed its text")
    ]
    assert states[("note", "B/2")] is None and states[("note_access", "B/2")] is None
    assert states[("note", "B/1")] == "deleted" and target.sent.count("n-2") == 1
    assert [(entity, source_id) for entity, source_id, _ in named] == [("note:kept", "B/2")]
    assert "haul undo --include-changed deletes it" in named[0][2]
    assert dict(everything.result.deleted) == {"note": 1} and target.held == {"s-1"}
    assert list(store.problems) == []


def test_every_entity_the_tracker_and_the_wiki_load_has_a_removal() -> None:
    """Undo says, for each kind of record loaded, how it is taken back or why it stays."""
    tracker = TrackerRemovals(None, None, None).removals()  # type: ignore[arg-type]
    wiki = WikiRemovals(None, None).removals()  # type: ignore[arg-type]
    for service, known in ((TrackerService(), tracker), (WikiService(), wiki)):
        loads = {entity.name for entity in service.entities if entity.loads}
        assert loads <= set(known), loads - set(known)
