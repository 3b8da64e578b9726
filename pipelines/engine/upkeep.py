"""The ledger's upkeep, the other half of its only writer (`writes`): rows planned from what is
staged, settled, renamed and forgotten as a plan or a send says, held for another part of a
sharded run, retried, and texts sent again once what they show is known::

    plan_ledger(store, plans)    -> new rows: what is staged, planned (settled, renamed)
    settle / rename / forget     what a plan or a send said it settled, renamed or forgot
    hold_back(_unplanned)        a sharded part's rows left to the part that loads them
    retry_failed_rows            `--retry-failed`: failed and waiting rows pending again
    resend_what_shows            loaded texts marked changed, to be written again
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from haul.pipelines.specs import EntitySpec, Forgotten, PlanItem, Planned, Ref, Renamed, Settled
from haul.state.ledger import Ledger
from haul.state.store import StagingStore

PlanFn = Callable[[StagingStore], Iterable[PlanItem]]


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
        if failed:
            resend_what_shows(store, specs, lambda _, shown: bool(failed.intersection(shown)))
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
    with store.transaction():  # inside another (`retry_failed_rows`): a savepoint of it
        for spec in (spec for spec in specs if spec.shows and spec.refresh):
            for row in list(store.ledger.iter_rows(entity=spec.name, status="done")):
                record = store.get_record(spec.staged, row.source_id)
                shown = [*spec.shows(record)] if record is not None and spec.shows else []
                if record is not None and apart(Ref(spec.staged, row.source_id), shown):
                    store.ledger.resend(spec.name, row.source_id)
                    marked += 1
    return marked


def plan_ledger(store: StagingStore, plans: Mapping[str, PlanFn]) -> int:
    """Bring the ledger up to date with what is staged, one transaction; return the new rows
    (run after every extract: counts and status are aggregate queries on the ledger)."""
    # the store reads in pages: writing meanwhile is safe; the plans write no staged record
    with store.transaction(), store.records_held():
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
