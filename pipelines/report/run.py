"""The report written beside the staging store at the end of every extract, load and run, even
a failed or interrupted one: `report.json` (figures) and `report.html` (the same, with charts).

Everything comes from the store: the run's row (outcome, times, the figures its stages
recorded), the ledger (counts per entity and status, failures by reason, done rows' times for
the throughput chart) and the last verify result; and, for the page's sections, the stages'
times, each service's figures, the rate budgets by name and the next command
(`pipelines.report.parts`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from haul.pipelines.commands.failures import store_failures
from haul.pipelines.commands.status import (
    VERIFY_CHECKPOINT as VERIFY_CHECKPOINT,  # verify.py writes it
)
from haul.pipelines.commands.status import verify_after
from haul.pipelines.engine import CHANGE, KEPT
from haul.pipelines.report import parts as report_parts
from haul.pipelines.services import Service
from haul.pipelines.waiting import NAMED, waiting_count, waiting_records
from haul.state.private import open_private
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

BUCKETS = 60


def _moment(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def throughput(store: StagingStore, start: str | None, end: str | None) -> list[dict[str, Any]]:
    """Records done per second over the run, in up to BUCKETS equal buckets."""
    where, params = "status = 'done'", []
    if start:
        where, params = where + " AND updated_at >= ?", [start]
    if end:
        where, params = where + " AND updated_at <= ?", [*params, end]
    times = [
        moment
        for (value,) in store.db.execute(f"SELECT updated_at FROM ledger WHERE {where}", params)
        if (moment := _moment(value)) is not None
    ]
    if not times:
        return []
    first, last = min(times), max(times)
    span = max((last - first).total_seconds(), 1.0)
    width = span / BUCKETS if span > BUCKETS else 1.0
    counts = Counter(int((t - first).total_seconds() // width) for t in times)
    return [
        {"second": round(index * width, 2), "per_second": round(counts.get(index, 0) / width, 2)}
        for index in range(int(span // width) + 1)
    ]


@dataclass(frozen=True)
class Headline:
    """The verdict a report opens with, and whether it is good news."""

    text: str
    ok: bool


def headline(
    outcome: str, failed: int, verify: Mapping[str, Any] | None, waiting: int = 0
) -> Headline:
    """ "ok" only when the run ended well, no record failed and the verify after it (if any)
    found the target matching; otherwise what is wrong, as the exit status says it (3 for
    failed records or verify differences, 1 for a run that stopped)."""
    if outcome != "ok":
        return Headline(outcome, ok=False)
    wrong = [f"{failed} record(s) failed"] if failed else []
    if verify is not None and not verify.get("ok"):
        wrong.append(f"verify found {verify.get('difference_count')} difference(s)")
    if wrong:
        return Headline("done, but " + " and ".join(wrong), ok=False)
    text = "ok, verified" if verify is not None else "ok"
    if waiting:  # not a failure: named, and made by the run that brings their other end in
        text += f", {waiting} record(s) waiting for a later run"
    return Headline(text, ok=True)


def run_headline(store: StagingStore, run: Mapping[str, Any]) -> Headline:
    """The headline of the store's latest run: its outcome, its failures, the verify after it."""
    failed = sum(states.get("failed", 0) for states in store.ledger.counts().values())
    failed += sum(not p.entity.endswith((CHANGE, KEPT)) for p in store.problems)
    verify = verify_after(store.get_checkpoint(VERIFY_CHECKPOINT), run.get("ended_at"))
    return headline(run.get("outcome") or "running", failed, verify, waiting_count(store))


def failures_by_reason(store: StagingStore) -> list[dict[str, Any]]:
    """The causes of the failed records, commonest first (`failures`): each with its root
    records' count and the records waiting under them ("issue X was not loaded")."""
    return [cause.as_dict() for cause in store_failures(store).causes[:50]]


def gather_report(store: StagingStore, services: Sequence[Service]) -> dict[str, Any]:
    """The report's figures, from the store (the latest run, ledger, problems, verify)."""
    from haul.pipelines.report.counts import entity_counts, in_use

    runs = store.recent_runs(1)
    run = runs[0] if runs else {}
    started, ended = _moment(run.get("started_at")), _moment(run.get("ended_at"))
    details = run.get("counts") or {}
    verdict = run_headline(store, run)
    return {
        "headline": {"text": verdict.text, "ok": verdict.ok},
        "run": {
            "id": run.get("id"),
            "command": run.get("command"),
            "outcome": run.get("outcome") or "running",
            "error": run.get("error"),
            "started_at": run.get("started_at"),
            "ended_at": run.get("ended_at"),
            "seconds": (ended - started).total_seconds() if started and ended else None,
        },
        "counts": [
            {
                "entity": row.entity,
                "staged": row.in_store,
                "to_load": row.to_load,
                "loaded": row.loaded - row.undone,  # in the target now
                "failed": row.failed,
                "pending": row.pending,
                "waiting": row.waiting,
                "undone": row.undone,
            }
            for row in entity_counts(store, in_use(store, services))
            if row.loadable
        ],
        # every record waiting for a later run, with what it waits for (the first NAMED)
        "waiting": [record.as_dict() for record in waiting_records(store, NAMED)],
        "waiting_count": waiting_count(store),
        "details": details,
        "requests": {k: v for k, v in details.items() if k.endswith("_requests")},
        "retries": {k: v for k, v in details.items() if k.endswith("_retries")},
        "rate_limit_waits": {k: v for k, v in details.items() if k.endswith("_rate_limit_wait_s")},
        "rates": {
            f"{key.removesuffix('_rate_history')} {direction}": points
            for key, value in details.items()
            if key.endswith("_rate_history") and isinstance(value, dict)
            for direction, points in value.items()
            if points
        },
        "unmapped_users": details.get("unmapped_users", []),
        "extract_problems": sum(not p.entity.endswith((CHANGE, KEPT)) for p in store.problems),
        "changes_not_carried": sum(p.entity.endswith(CHANGE) for p in store.problems),
        "open_conflicts": sum(1 for _ in store.conflicts.iter_open()),  # haul resolve's
        "kept_as_changed": [  # by undo: a person changed them in the target since haul wrote them
            {"entity": p.entity.removesuffix(KEPT), "source_id": p.source_id, "why": p.error}
            for p in store.problems
            if p.entity.endswith(KEPT)
        ],
        "failures_by_reason": failures_by_reason(store),
        "throughput": throughput(store, run.get("started_at"), run.get("ended_at")),
        "verify": store.get_checkpoint(VERIFY_CHECKPOINT),
    } | _parts(store, run, details, services)


def _parts(
    store: StagingStore, run: dict[str, Any], details: dict[str, Any], services: Sequence[Service]
) -> dict[str, Any]:
    """The page's sections beyond the counts (`pipelines.report.parts`)."""
    from haul.pipelines.report.counts import entity_counts, in_use

    verify = store.get_checkpoint(VERIFY_CHECKPOINT)
    counts = [  # with what is staged for exports only (no load figures: "-")
        {"entity": r.entity, "staged": "-" if r.in_store is None else r.in_store,
         "to_load": r.to_load, "loaded": r.loaded - r.undone, "failed": r.failed,
         "pending": r.pending, "undone": r.undone}
        if r.loadable else
        {"entity": r.entity, "staged": r.in_store, "to_load": "-", "loaded": "-", "failed": "-",
         "pending": "-", "undone": "-"}
        for r in entity_counts(store, in_use(store, services))
    ]  # fmt: skip
    return {
        "stages": report_parts.stages(store, run, verify),
        "runs": report_parts.recent(store),
        "services": report_parts.per_service(details, counts, services),
        "rate_lines": report_parts.rate_lines(details),
        "next": report_parts.next_step(store, verify, run.get("ended_at"), services),
    }


def write_reports(store: StagingStore, services: Sequence[Service]) -> tuple[Path, Path]:
    """Write report.json and report.html beside the staging store; return their paths."""
    from haul.pipelines.report.html import render_html

    report = gather_report(store, services)
    json_path = store.path.with_name("report.json")
    html_path = store.path.with_name("report.html")
    # private like the store they describe: they name records and people
    with open_private(json_path, encoding="utf-8") as out:
        out.write(json.dumps(report, indent=2, default=str))
    with open_private(html_path, encoding="utf-8") as out:
        out.write(render_html(report))
    log.info("report_written", json=str(json_path), html=str(html_path))
    return json_path, html_path


@contextmanager
def reporting(store: StagingStore, services: Sequence[Service]) -> Iterator[None]:
    """Write the reports when the block ends, however it ends (place it outside the run)."""
    try:
        yield
    finally:
        try:
            write_reports(store, services)
        except Exception as exc:  # a report must never hide what the run did
            log.warning("report_failed", error=f"{type(exc).__name__}: {exc}")
