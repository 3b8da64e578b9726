"""A big staging store built straight into SQLite: `issues` issues with three comments each,
staged and planned, none loaded (for `haul status`'s test and bench/status.py)."""

from __future__ import annotations

from pathlib import Path

from haul.state.store import StagingStore

NOW = "2024-01-01T00:00:00Z"


def build_store(path: Path, issues: int) -> None:
    rows = [("issue", f"Q-{n}", "Q", NOW, f"h{n}", None, "{}", NOW) for n in range(issues)]
    rows += [
        ("comment", f"Q-{n // 3}/{n}", f"Q-{n // 3}", NOW, f"c{n}", None, "{}", NOW)
        for n in range(3 * issues)
    ]
    with StagingStore.open(path) as store:
        with store.transaction():
            store.db.conn.executemany(
                "INSERT INTO records (entity, source_id, parent, updated_at, content_hash, blob,"
                " raw, staged_at) VALUES (?,?,?,?,?,?,?,?)",
                rows,
            )
        store.ledger.plan(
            {"entity": entity, "source_id": source_id, "payload_hash": digest}
            for entity, source_id, _, _, digest, *_ in rows
        )
