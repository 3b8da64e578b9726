"""`haul undo` killed with SIGKILL at random instants, run again, ends as if never killed.

The small org is migrated whole, then taken back by `haul undo` processes killed mid-work
(after a random number of records undone, plus a random few milliseconds), then run to the
end. The target holds what it held before the migration, read through the plain API; every
record undo can delete is marked undone in the ledger; and nothing was deleted twice: each
deletion is one DELETE, but for the one a kill may have left in flight (undo deletes one
record at a time), which the next run sends again and finds gone.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.state.ledger import UNDONE
from haul.state.store import StagingStore
from tests.helpers.crash_runs import finish, haul
from tests.helpers.haul_fixtures import TOKEN_ENV, source_queues, write_config, writes
from tests.helpers.target_records import target_records

KILLS = 4
SCOPE = {"entities": "all", "filters": "all", "dashboards": "all"}
KEPT_KINDS = {"issue", "dashboards", "components", "versions", "boards", "board_column"}


def undo_states(db: Path) -> dict[str, int]:
    """How many loaded rows are in each undo state ("in_flight", "deleted", "gone", ...)."""
    if not db.exists():
        return {}
    with StagingStore.open(db) as store:
        counts: dict[str, int] = {}
        for row in store.ledger.iter_rows(status="done"):
            if row.undo:
                counts[row.undo] = counts.get(row.undo, 0) + 1
        return counts


def undone(db: Path) -> int:
    return sum(n for state, n in undo_states(db).items() if state in UNDONE)


def deletes(sandbox: RunningSandbox) -> tuple[int, int]:
    """The DELETEs the sandbox answered: (of checklist items, of everything else). Undo takes a
    checklist back item by item, so its one ledger row may take several DELETEs."""
    by_route = writes(sandbox.stats()).items()
    deleted = [(route, n) for route, n in by_route if route.startswith("DELETE")]
    items = sum(n for route, n in deleted if "checklistItems" in route)
    return items, sum(n for _, n in deleted) - items


def kill_undo(config: Path, env: dict[str, str], rng: random.Random, threshold: int) -> bool:
    """Start `haul undo --yes`, SIGKILL it a random instant after `threshold` rows are undone;
    True if it was killed before it ended."""
    db = config.parent / "haul.db"
    process = haul(config, "undo", "--yes", env=env)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if undone(db) >= threshold:
            time.sleep(rng.uniform(0, 0.02))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.communicate()
                return True
        time.sleep(0.005)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr.decode()
    return False


@pytest.mark.slow  # about a minute; tests/pipelines/test_undo_ledger.py has the fast kind
def test_undo_killed_anywhere_then_run_again_deletes_everything_once(tmp_path: Path) -> None:
    rng = random.Random(37)
    with start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        roots = list(info["wiki_roots"]["source"])
        before = target_records(sandbox, roots)
        config = write_config(tmp_path, info, queues=source_queues(info),
                              services=("tracker", "wiki"), scope=SCOPE)  # fmt: skip
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        finish(config, "run", env)
        db = config.parent / "haul.db"
        planned = _deletable(config, env)
        loaded = target_records(sandbox, roots)
        items = len(loaded.get("checklist_item", set()) - before.get("checklist_item", set()))
        with StagingStore.open(db) as store:  # their rows: one each in `planned`
            checklists = sum(1 for _ in store.ledger.iter_rows(status="done", entity="checklist"))

        kills = 0
        for step in range(1, KILLS + 1):
            kills += kill_undo(config, env, rng, planned * step // (KILLS + 2))
        _finish_undo(config, env)

        assert kills >= KILLS - 1  # a fast machine may end one run before its kill
        after = target_records(sandbox, roots)
        for kind in (set(before) | set(after)) - KEPT_KINDS:
            assert after.get(kind, set()) == before.get(kind, set()), kind
        states = undo_states(db)
        assert "in_flight" not in states
        assert states["deleted"] + states.get("gone", 0) == planned
        # a record found gone was in flight at a kill: its DELETE was sent before, once
        assert states.get("gone", 0) <= kills
        # one DELETE per record, and per checklist item haul wrote (a kill may send one twice)
        item_deletes, other_deletes = deletes(sandbox)
        assert item_deletes <= items + kills
        assert other_deletes <= planned - checklists + kills


def _deletable(config: Path, env: dict[str, str]) -> int:
    """How many records the undo will delete, as its dry run says (the ledger planned)."""
    process = haul(config, "undo", "--dry-run", env=env)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr.decode()
    total = 0
    for line in stdout.decode().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if len(cells) == 4 and cells[1].isdigit():
            total += int(cells[1])
    assert total > 500  # the small org's comments, pages, entities, ...
    return total


def _finish_undo(config: Path, env: dict[str, str]) -> None:
    process = haul(config, "undo", "--yes", env=env)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, (stdout + stderr).decode()
