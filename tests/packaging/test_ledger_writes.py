"""Only the load engine writes the ledger's rows.

The ledger is what makes a load exactly once; a module that marks rows done behind the
engine's back (a status recorded while a plan is read, another entity's rows completed inside a
send) makes a row's state depend on code the engine does not know. A spec says what its plan or
its send settled, renamed or forgot (`Settled`, `Renamed`, `Sent`'s `Forgotten`) and where it
moved its record (`relocate`), and the engine's ledger writes (`pipelines/engine/writes.py`
and its `upkeep.py`) record it. Read from the source: every call of a ledger method that writes, anywhere in
`pipelines/` but that one module (the engine's walk and its one-record room included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # reads the source only

ROOT = Path(__file__).resolve().parents[2]
# the engine's ledger writes: its moves of rows (`writes`) and its upkeep of them (`upkeep`)
ENGINE = (ROOT / "pipelines" / "engine" / "writes.py", ROOT / "pipelines" / "engine" / "upkeep.py")
# the row's state machine (state/ledger.py), haul undo's two steps and a link's wait too: the
# engine's alone
TRANSITIONS = {
    "plan",
    "begin",
    "done",
    "fail",
    "release",
    "refreshed",
    "undo_begin",
    "undone",
    "undo_called_off",
    "wait",
    "wake",
}
# what changes a row's identity or takes it back, not its load: a record moved at the source
# (renamed rows), moved in the target (retarget), deleted (forgotten), a failed row retried and
# the loaded texts that show it written again after it (resend; both the engine's
# `retry_failed_rows`)
UPKEEP = {"retarget", "rename", "rename_under", "forget", "forget_children", "forget_under",
          "retry_failed", "resend"}  # fmt: skip
READS = {"children", "parent_entities", "is_claimed", "any_found", "iter_changed", "get",
         "target_id", "iter_rows", "counts", "undo_counts"}  # fmt: skip
# the modules besides the engine allowed an upkeep write, by file name (they may move between
# folders), and why: none. The sync's moves and deletions say what they renamed, relocated
# and forgot (`Renamed`, `relocate`, `Forgotten`); --retry-failed is `retry_failed_rows`
UPKEEP_BY: dict[str, set[str]] = {}


def ledger_methods() -> set[str]:
    """The public methods of `state.ledger.Ledger`."""
    tree = ast.parse((ROOT / "state" / "ledger.py").read_text(encoding="utf-8"))
    ledger = next(
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Ledger"
    )
    return {
        node.name
        for node in ledger.body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    }


def ledger_calls(path: Path) -> list[tuple[int, str]]:
    """(line, method) of each call on something named `ledger` (`store.ledger.done(...)`,
    `ledger.plan(...)`) in the module."""
    calls = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name == "ledger":
            calls.append((node.lineno, node.func.attr))
    return calls


def writes_outside_the_engine() -> dict[str, set[str]]:
    """Module (relative path) -> the writing ledger methods it calls."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "pipelines").rglob("*.py")):
        if path in ENGINE:
            continue
        for _, method in ledger_calls(path):
            if method in TRANSITIONS | UPKEEP:
                found.setdefault(str(path.relative_to(ROOT)), set()).add(method)
    return found


def test_every_ledger_method_is_known_as_a_read_or_a_write() -> None:
    """A method added to the ledger is sorted here before the check below can miss it."""
    assert ledger_methods() == TRANSITIONS | UPKEEP | READS


def test_no_module_but_the_engine_moves_a_ledger_row_through_its_states() -> None:
    """Planning, sending, settling, failing and refreshing rows: the engine's alone."""
    moved = {
        module: sorted(methods & TRANSITIONS)
        for module, methods in writes_outside_the_engine().items()
        if methods & TRANSITIONS
    }
    assert moved == {}, "write through the engine's contract (Settled, Sent) instead"


def test_no_module_but_the_engine_renames_retargets_forgets_or_retries_rows() -> None:
    """Renaming, retargeting, forgetting and retrying rows: the engine's too (a plan yields
    `Renamed`, a spec `relocate`s, a send or find answers `Sent` with `Forgotten` rows)."""
    upkeep = {
        module: methods & UPKEEP
        for module, methods in writes_outside_the_engine().items()
        if not methods & UPKEEP <= UPKEEP_BY.get(Path(module).name, set())
    }
    assert upkeep == {}, "say it through the engine's contract (Renamed, relocate, Forgotten)"


def test_nothing_but_the_engine_writes_the_ledger() -> None:
    """The whole check at once: every writing ledger call in `pipelines/` is the engine's."""
    assert writes_outside_the_engine() == {}


def test_the_check_reads_the_calls_it_means() -> None:
    """The engine's own writes are read as such (the check would otherwise pass on nothing):
    each writing method of the ledger, the upkeep too, is called there."""
    methods = {method for path in ENGINE for _, method in ledger_calls(path)}
    assert methods >= TRANSITIONS | UPKEEP
