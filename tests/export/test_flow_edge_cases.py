"""The seeded histories where flow tools disagree (reopened, start skipped, cancelled, moved
between queues, a renamed status, creation entries by the creator), exported with each
`[model] cycle` and checked against a hand count of the staged changelog: a test per case,
each over first, last and sum."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import pytest

from haul.pipelines.export.values import parse_timestamp
from haul.state.store import StagingStore
from tests.helpers.export_fixtures import Staged, only_folder, stage_sandbox

MODES = ("first", "last", "sum")
FINISHED = {"resolved", "closed", "cancelled"}


@dataclass
class Move:
    """One status change of the changelog, by hand: when, from, to, and the names shown."""

    at: int  # whole seconds
    before: str | None
    after: str
    after_name: str | None


@dataclass
class History:
    key: str
    created: int
    moves: list[Move]
    entries: list[dict[str, Any]]

    def times(self, status: str) -> list[int]:
        return [move.at for move in self.moves if move.after == status]

    @property
    def statuses(self) -> list[str]:
        return [move.after for move in self.moves]


def seconds(text: str) -> int:
    moment = parse_timestamp(text)
    assert moment is not None, text
    return int(moment.timestamp() // 1)


def by_hand(issue: dict[str, Any], entries: list[dict[str, Any]]) -> History:
    """The status changes of the raw changelog: a change of `status` dated by its entry's
    statusStartTime (else its updatedAt), the creation's first status left out."""
    moves = []
    for entry in sorted(entries, key=lambda e: (e["updatedAt"], e["id"])):
        fields = {change["field"]["id"]: change for change in entry["fields"]}
        status = fields.get("status")
        if status is None or status["from"] is None:
            continue
        start = fields.get("statusStartTime")
        when = seconds(start["to"] if start else entry["updatedAt"])
        to = status["to"]
        moves.append(Move(when, status["from"]["key"], to["key"], to.get("display")))
    return History(issue["key"], seconds(issue["createdAt"]), moves, entries)


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        yield stage_sandbox(sandbox, tmp_path_factory.mktemp("edges"))


@pytest.fixture(scope="module")
def histories(staged: Staged) -> dict[str, History]:
    with StagingStore.open_readonly(staged.store_path) as store:
        issues = {record.source_id: record.raw for record in store.iter_records("issue")}
        entries: dict[str, list[dict[str, Any]]] = {}
        for record in store.iter_records("changelog"):
            entries.setdefault(str(record.parent), []).append(record.raw)
    return {key: by_hand(issue, entries.get(key, [])) for key, issue in issues.items()}


@pytest.fixture(scope="module")
def cycles(staged: Staged) -> dict[str, dict[str, dict[str, Any]]]:
    """Mode -> issue -> its cycle_times row, from an export with that `[model] cycle`."""
    found = {}
    base = staged.config.read_text()
    for mode in MODES:
        config = staged.config.with_name(f"haul-{mode}.toml")
        config.write_text(f'{base}\n[model]\ncycle = "{mode}"\n')
        out = staged.directory / f"out-{mode}"
        done = staged.haul("export", "--config", config, "--out", out, "--format", "parquet")
        assert done.returncode == 0, done.stdout + done.stderr
        with duckdb.connect(str(only_folder(out) / "haul.duckdb"), read_only=True) as db:
            rows = db.execute("SELECT * FROM cycle_times").fetchall()
            names = [column[0] for column in db.description]  # type: ignore[union-attr]
        found[mode] = {row[0]: dict(zip(names, row, strict=True)) for row in rows}
    return found


def whole(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() // 1)


def check(row: dict[str, Any], lead: int | None, cycle: int | None, history: History) -> None:
    got = (row["lead_s"], row["cycle_s"])
    assert got == (lead, cycle), (history.key, history.statuses)


def of_shape(histories: dict[str, History], test: Any) -> list[History]:
    chosen = [history for history in histories.values() if test(history)]
    assert chosen, "the seeded org has no such history"
    return chosen


def test_a_reopened_issue_counts_its_first_its_whole_or_its_summed_cycles(
    histories: dict[str, History], cycles: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Started, resolved, reopened, started and resolved again: first = the first cycle;
    last = first start to the last resolve; sum = both cycles; lead to that resolve."""
    reopened = of_shape(histories, lambda h: ("resolved", "open") in itertools.pairwise(h.statuses))
    for history in reopened:
        (start1, start2), resolves = history.times("inProgress"), history.times("resolved")
        first, last = resolves[0] - start1, resolves[-1] - start1
        summed = first + resolves[-1] - start2
        check(cycles["first"][history.key], resolves[0] - history.created, first, history)
        check(cycles["last"][history.key], resolves[-1] - history.created, last, history)
        check(cycles["sum"][history.key], resolves[-1] - history.created, summed, history)
        assert (
            cycles["sum"][history.key]["reopened"] == 1
            and cycles["sum"][history.key]["cycles"] == 2
        )


def test_an_issue_finished_with_its_start_skipped_has_a_lead_but_no_cycle(
    histories: dict[str, History], cycles: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Open straight to resolved: lead time to the resolve, no cycle time, in every mode."""
    skipped = of_shape(
        histories, lambda h: h.statuses[:1] == ["resolved"] and "inProgress" not in h.statuses
    )
    for history in skipped:
        for mode in MODES:
            check(cycles[mode][history.key], history.times("resolved")[0] - history.created,
                  None, history)  # fmt: skip


def test_an_issue_cancelled_then_reopened_is_measured_from_its_real_work(
    histories: dict[str, History], cycles: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Cancelled, reopened, then worked: the cancel finishes no cycle (none had started);
    cycle and lead run to the resolve after the start, or are empty while it is open."""
    cancelled = of_shape(histories, lambda h: h.statuses[:2] == ["cancelled", "open"])
    for history in cancelled:
        start = history.times("inProgress")[0]
        resolves = history.times("resolved")
        for mode in MODES:
            row = cycles[mode][history.key]
            if resolves:
                check(row, resolves[-1] - history.created, resolves[-1] - start, history)
            else:
                check(row, None, None, history)
        assert whole(cycles["first"][history.key]["first_done_at"]) == history.times("cancelled")[0]


def test_an_issue_moved_between_queues_keeps_its_cycle_and_its_queue_history(
    staged: Staged,
    histories: dict[str, History],
    cycles: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """A move from another queue is in its queue's history; its cycle is counted as usual
    and it counts in its queue now."""
    moved = of_shape(
        histories,
        lambda h: any(c["field"]["id"] == "queue" for e in h.entries for c in e["fields"]),
    )
    with duckdb.connect(
        str(only_folder(staged.directory / "out-first") / "haul.duckdb"), read_only=True
    ) as db:
        queues = dict(
            db.execute(
                "SELECT issue_key, list(value ORDER BY valid_from) FROM issue_field_history "
                "WHERE field = 'queue' GROUP BY issue_key"
            ).fetchall()
        )
    for history in moved:
        change = next(
            c for e in history.entries for c in e["fields"] if c["field"]["id"] == "queue"
        )
        now = history.key.split("-")[0]
        assert queues[history.key] == [change["from"], now] and change["from"] != now
        starts, resolves = history.times("inProgress"), history.times("resolved")
        for mode in MODES:
            row = cycles[mode][history.key]
            assert row["queue_key"] == now
            if starts and resolves:
                check(row, resolves[0] - history.created, resolves[0] - starts[0], history)


def test_a_renamed_status_is_followed_by_its_key_not_its_old_name(
    staged: Staged,
    histories: dict[str, History],
    cycles: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """The history names inProgress by its old name ("In work"); the model follows the key:
    the work starts there, and status_intervals name it as the dictionary does now."""
    renamed = of_shape(
        histories,
        lambda h: any(m.after == "inProgress" and m.after_name == "In work" for m in h.moves),
    )
    with duckdb.connect(
        str(only_folder(staged.directory / "out-first") / "haul.duckdb"), read_only=True
    ) as db:
        names = {row[0] for row in db.execute(
            "SELECT DISTINCT status_name FROM status_intervals WHERE status_key = 'inProgress'"
        ).fetchall()}  # fmt: skip
    assert names == {"In progress"}
    for history in renamed:
        start, resolves = history.times("inProgress")[0], history.times("resolved")
        assert whole(cycles["first"][history.key]["started_at"]) == start
        if resolves:
            for mode in MODES:
                check(cycles[mode][history.key], resolves[-1] - history.created,
                      resolves[-1] - start, history)  # fmt: skip


def test_every_creation_entry_is_by_the_issues_creator(staged: Staged) -> None:
    """The entry that made each issue is authored by who created it."""
    with StagingStore.open_readonly(staged.store_path) as store:
        creators = {r.source_id: r.raw["createdBy"]["id"] for r in store.iter_records("issue")}
        made = {
            str(r.parent): r.raw["updatedBy"]["id"]
            for r in store.iter_records("changelog")
            if r.raw["type"] == "IssueCreated"
        }
    assert made == creators
