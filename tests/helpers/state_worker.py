"""Child-process side of the lock and crash tests: `python state_worker.py ACTION DB_PATH`.

Each action announces progress on stdout, one line at a time, so the parent test can act
at a known point (take the lock, kill the process) without sleeping blindly.
"""

import os
import sys
import time

from haul.state import StagingStore

ROWS_PER_PAGE = 20


def hold(store: StagingStore) -> None:
    """Hold the run lock until killed."""
    with store.run("extract --hold"):
        print("locked", flush=True)
        time.sleep(60)


def die_holding(store: StagingStore) -> None:
    """Take the run lock and end the process without releasing it or closing the run."""
    with store.run("load --crash"):
        print("locked", flush=True)
        os._exit(3)


def write_pages(store: StagingStore) -> None:
    """Commit pages of records, each with its checkpoint and ledger plan, until killed."""
    page = 0
    while True:
        rows = [
            {"source_id": f"P{page}-{n}", "raw": {"page": page, "n": n, "pad": "x" * 500}}
            for n in range(ROWS_PER_PAGE)
        ]
        with store.transaction():
            store.upsert_records("issue", rows)
            store.ledger.plan(
                {"entity": "issue", "source_id": r["source_id"], "payload_hash": "h"} for r in rows
            )
            store.set_checkpoint("issues", {"page": page})
        print(page, flush=True)
        page += 1


ACTIONS = {"hold": hold, "die-holding": die_holding, "write-pages": write_pages}

if __name__ == "__main__":
    action, db_path = sys.argv[1], sys.argv[2]
    with StagingStore.open(db_path) as opened:
        ACTIONS[action](opened)
