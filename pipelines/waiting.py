"""Records that wait for a later run: neither loaded nor failed, each named with what it waits for.

A link whose other end is in a queue not migrated yet waits in the ledger (`waiting`) until
the run that brings that end in makes it (see `pipelines.engine`). `haul status` and the run
report count them and name them, so that none is dropped in silence, however long it waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from haul.state.store import StagingStore

SHOWN = 20  # waiting records `haul status` names one by one; the report names up to NAMED
NAMED = 1000


@dataclass(frozen=True)
class Waiting:
    """One waiting record and what it waits for (the ledger's reason)."""

    entity: str
    source_id: str
    reason: str

    def line(self) -> str:
        return f"{self.entity} {self.source_id} {self.reason}"

    def as_dict(self) -> dict[str, str]:
        return {"entity": self.entity, "source_id": self.source_id, "reason": self.reason}


def waiting_records(store: StagingStore, limit: int | None = None) -> list[Waiting]:
    """The waiting records, in (entity, source id) order; the first `limit` when given."""
    rows = store.ledger.iter_rows(status="waiting")
    return [Waiting(r.entity, r.source_id, r.error or "") for r in islice(rows, limit)]


def waiting_count(store: StagingStore) -> int:
    """How many records wait, from the ledger's counts."""
    return sum(states.get("waiting", 0) for states in store.ledger.counts().values())


def waiting_lines(named: list[Waiting], total: int) -> list[str]:
    """`waiting: link DEV-3/12 waits for issue OPS-7, ...`, one line per record named, then
    how many more there are."""
    lines = [f"waiting: {record.line()}" for record in named]
    if total > len(named):
        lines.append(
            f"waiting: {total - len(named)} more (report.json beside the store names them)"
        )
    return lines


def next_step(total: int) -> str:
    """What to do about records that wait, in one line."""
    return (
        f"{total} records wait for records outside the migration's scope so far (a link to a"
        " queue not migrated yet): migrate those queues, and the run that does makes them"
    )
