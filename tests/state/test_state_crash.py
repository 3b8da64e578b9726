"""A writer killed mid-loop leaves a consistent store that opens and resumes."""

import signal
from pathlib import Path

import pytest

from haul.state import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

ROWS_PER_PAGE = 20  # as in state_worker.write_pages


def test_sigkilled_writer_leaves_a_consistent_store(db_path: Path, spawn_worker) -> None:
    """Each committed page has its rows, ledger rows and checkpoint; nothing half-written."""
    StagingStore.open(db_path).close()  # migrate first so the child starts writing at once
    child = spawn_worker("write-pages", db_path)
    for line in child.stdout:
        if int(line) >= 40:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)

    with StagingStore.open(db_path) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        page = store.get_checkpoint("issues")["page"]
        assert page >= 40
        covered = (page + 1) * ROWS_PER_PAGE
        assert store.count_records() == {"issue": covered}
        assert store.ledger.counts() == {"issue": {"pending": covered}}
        assert store.get_record("issue", f"P{page}-{ROWS_PER_PAGE - 1}") is not None
        assert store.get_record("issue", f"P{page + 1}-0") is None

        with store.transaction():  # and it resumes where it left off
            store.upsert_records("issue", [{"source_id": f"P{page + 1}-0", "raw": {}}])
            store.set_checkpoint("issues", {"page": page + 1})
        assert store.count_records() == {"issue": covered + 1}
