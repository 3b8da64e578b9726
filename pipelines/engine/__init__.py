"""The load engine: every entity spec's records into the target through the ledger, exactly once.

For each record: mark it `in_flight` and commit, send, record `done` with the target id and
commit. Before loading, every `in_flight` row an interrupted run left is reconciled by asking
the target (the spec's `find`); an ambiguous write (it may have been applied) is resolved the
same way at once. A record the target rejects is `failed` with its reason, and so is every
record below it ("... was not loaded"), and the run goes on. A record that needs one no run
brought in yet (`RecordWaiting`) is `waiting`, and so is nothing else: a later load wakes it
once its plan holds what the record `requires` (or `--retry-failed` asks). A record found in
the target rather than made (a rerun with a lost store) is `done` and marked found; each record
under it is looked for before it is made. The engine knows no entity by name.

Three rooms, each drawn in its own docstring:

    walk.py    (with trees.py)  which record loads when: phases, trees, waves of siblings
    record.py  one record exactly once: look first, send, settle an uncertain write, refresh
    writes.py  (with upkeep.py) the ledger's only writer: every move of a row, and the count
               it adds to; the ledger planned, held, retried
"""

from haul.pipelines.engine.record import PLAN_CONFLICTS, PlannedConflict, planned_conflicts
from haul.pipelines.engine.upkeep import (
    PlanFn,
    forget,
    hold_back,
    hold_back_unplanned,
    plan_ledger,
    rename,
    resend_what_shows,
    retry_failed_rows,
    settle,
)
from haul.pipelines.engine.walk import LoadEngine
from haul.pipelines.engine.writes import (
    CHANGE,
    KEPT,
    LoadStats,
    begin_undo,
    call_off_undo,
    record_undone,
)

__all__ = [
    "CHANGE",
    "KEPT",
    "PLAN_CONFLICTS",
    "LoadEngine",
    "LoadStats",
    "PlanFn",
    "PlannedConflict",
    "begin_undo",
    "call_off_undo",
    "forget",
    "hold_back",
    "hold_back_unplanned",
    "plan_ledger",
    "planned_conflicts",
    "record_undone",
    "rename",
    "resend_what_shows",
    "retry_failed_rows",
    "settle",
]
