"""`haul status`: counts, the last runs (a SIGKILLed one as interrupted), the next action, speed."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.commands.status import gather_status
from haul.pipelines.registry import services
from haul.state.store import StagingStore
from tests.helpers.big_store import build_store
from tests.helpers.trust_fixtures import (
    load_under_way,
    migrated,
    run_haul,
    source_queues,
    stop,
    tokens_env,
    write_config,
)


@pytest.mark.slow  # one of several full runs of its kind; make test-all runs it
def test_status_after_a_clean_run_says_verify_next(sandbox: Any, tmp_path: Path) -> None:
    config, env = migrated(tmp_path, sandbox.info)

    done = run_haul("status", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    assert "issue in the source: 50" in done.stdout
    assert "link staged twice: " in done.stdout  # the inward side of links within the scope
    assert "link skipped: " not in done.stdout  # ... is the same link, loaded once
    assert "run 1: run ok" in done.stdout
    # the next step, then the last run's requests per service
    lines = done.stdout.rstrip().splitlines()
    nexts = [n for n, line in enumerate(lines) if line.startswith("next: ")]
    assert [lines[n] for n in nexts] == [
        "next: everything staged is loaded: run haul verify to compare the target"
    ]
    requests = lines[nexts[0] + 1 :]
    assert requests and all(line.startswith("last run: ") for line in requests)


def test_a_sigkilled_load_shows_as_interrupted(sandbox: Any, tmp_path: Path) -> None:
    try:
        config, env, load = load_under_way(sandbox, tmp_path)
        running = run_haul("status", "--config", config, env=env)
        os.kill(load.pid, signal.SIGKILL)
        stop(load)
    finally:
        sandbox.set_faults("")

    assert "run 2: load running" in running.stdout
    assert "next: a haul load run is under way" in running.stdout
    done = run_haul("status", "--config", config, env=env)
    assert "run 2: load interrupted" in done.stdout, done.stdout
    assert "next: the last run was interrupted: run haul load to resume" in done.stdout


@pytest.mark.slow  # a 100 000-issue store; the other status tests stay in make test
def test_status_counts_a_100k_issue_store(tmp_path: Path) -> None:
    """gather_status on a store of 100 000 issues and 300 000 comments counts them all (how
    long it takes is bench/status.py's figure, not a test's)."""
    build_store(tmp_path / "big.db", 100_000)
    with StagingStore.open(tmp_path / "big.db") as store:
        status = gather_status(store, services())
    lines = {line.entity: line for line in status.lines}
    assert lines["issue"].staged == 100_000 and lines["comment"].pending == 300_000


def test_failures_csv_lists_every_failure_and_status_says_so(sandbox: Any, tmp_path: Path) -> None:
    import csv

    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    sandbox.set_faults("error_object:1.0@*/links")
    try:
        assert run_haul("extract", "--config", config, env=env).returncode == 3
    finally:
        sandbox.set_faults("")
    listing = tmp_path / "failures.csv"

    done = run_haul("failures", "--config", config, "--limit", "1", "--csv", listing, env=env)
    status = run_haul("status", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    with listing.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) > 1 and {row["stage"] for row in rows} == {"extract"}
    assert f"{len(rows)} failed record(s), 1 shown" in done.stdout
    assert f"next: {len(rows)} records could not be extracted whole" in status.stdout


def test_the_counts_table_totals_the_loadable_entities_only() -> None:
    """Staged records and the rows to load side by side; a staged-only entity shows its staged
    count and dashes, and stays out of the total."""
    from rich.console import Console

    from haul.pipelines.report.counts import EntityCounts, render_counts

    console = Console(record=True, width=100)
    render_counts(
        [
            EntityCounts("issue", to_load=5, loaded=3, failed=1, pending=1, in_store=6),
            EntityCounts("comment", to_load=7, loaded=7, failed=0, pending=0, in_store=7),
            EntityCounts("comment_attachment", to_load=2, loaded=2, failed=0, pending=0),
            EntityCounts("changelog", 0, 0, 0, 0, loadable=False, in_store=40),
        ],
        console,
        title="counts",
    )
    cells = {
        row[0]: row[1:]
        for row in (
            [cell.strip() for cell in line.strip("│").split("│")]
            for line in console.export_text().splitlines()
            if line.startswith("│")
        )
    }
    assert cells["issue"] == ["6", "5", "3", "1", "1"]
    assert cells["comment_attachment"] == ["-", "2", "2", "0", "0"]  # loads from attachments
    assert cells["changelog"] == ["40", "-", "-", "-", "-"]
    assert cells["total"] == ["-", "14", "12", "1", "1"]


def test_a_link_staged_from_both_ends_is_neither_skipped_nor_counted_twice(
    tmp_path: Path,
) -> None:
    """A link between two staged issues is staged under each (same id), planned once: status
    says staged twice, not skipped; a staged link never planned for another reason is skipped."""
    from rich.console import Console

    from haul.pipelines.commands.status import print_status

    now = "2024-01-01T00:00:00Z"
    with StagingStore.open(tmp_path / "links.db") as store:
        rows = [
            ("issue", "Q-1", None),
            ("issue", "Q-2", None),
            ("link", "Q-1/7", "Q-1"),  # outward: planned
            ("link", "Q-2/7", "Q-2"),  # the same link, inward: staged twice
            ("link", "Q-1/8", "Q-1"),  # to an issue outside the scope: planned
            ("link", "Q-2/9", "Q-2"),  # not planned, no twin: skipped
        ]
        with store.transaction():
            store.db.conn.executemany(
                "INSERT INTO records (entity, source_id, parent, updated_at, content_hash, blob,"
                " raw, staged_at) VALUES (?,?,?,?,?,?,?,?)",
                [(e, s, p, now, f"h{s}", None, "{}", now) for e, s, p in rows],
            )
        store.ledger.plan(
            {"entity": e, "source_id": s, "payload_hash": f"h{s}"}
            for e, s, _ in rows
            if s not in ("Q-2/7", "Q-2/9")
        )
        status = gather_status(store, services())
    link = next(line for line in status.lines if line.entity == "link")
    assert (link.staged, link.twice, link.skipped) == (4, 1, 1)
    console = Console(record=True, width=200)
    print_status(status, [], console, "haul status")
    text = console.export_text()
    assert "link staged twice: 1 (" in text and "link skipped: 1 (" in text


def test_status_after_an_extract_counts_each_link_once(sandbox: Any, tmp_path: Path) -> None:
    """Through the CLI: the links between staged issues are staged from both ends and planned
    once; status says so ("staged twice"), and skips none of them."""
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0

    done = run_haul("status", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    assert "link staged twice: " in done.stdout
    assert "link skipped" not in done.stdout


def test_status_counts_what_undo_took_back_and_sends_an_interrupted_undo_on(
    tmp_path: Path,
) -> None:
    """Comments loaded, two taken back by haul undo and one begun by an undo that was killed:
    status names both (still loaded in the table), and the next action is to run undo again;
    once the last deletion is recorded, only the count is left."""
    with StagingStore.open(tmp_path / "haul.db") as store:
        for n in (1, 2, 3, 4):
            store.ledger.plan([{"entity": "comment", "source_id": f"Q-1/{n}", "payload_hash": "h"}])
            store.ledger.done("comment", f"Q-1/{n}", f"t-{n}")
        store.ledger.undo_begin("comment", "Q-1/1")
        store.ledger.undone("comment", "Q-1/1", "deleted")
        store.ledger.undo_begin("comment", "Q-1/2")
        store.ledger.undone("comment", "Q-1/2", "gone")
        store.ledger.undo_begin("comment", "Q-1/3")
        killed = gather_status(store, services())
        store.ledger.undone("comment", "Q-1/3", "deleted")
        settled = gather_status(store, services())

    assert killed.undone == {"comment": (2, 1)}
    assert killed.next_action().startswith("1 deletions of an interrupted undo may not be sent")
    assert settled.undone == {"comment": (3, 0)}
    assert "undo" not in settled.next_action()
    lines = {line.entity: line for line in settled.lines}
    assert lines["comment"].loaded == 4
