"""What the report shows beyond the counts, from the store: how long each stage took, each
service's figures, the rate budgets as people name them, and the command to run next.

    stages(store, run, verify)    extract, load and verify: when each began and ended
    recent(store)                 the last runs, newest first
    per_service(details, counts, services)  per service: its entities' counts, its requests per side
    rate_lines(details)           one rate budget per service and direction, named for people
    next_step(store, verify, end, services)  what `haul status` says next, or, once all is loaded, verify
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from haul.pipelines.services import Service
from haul.state.store import StagingStore

SIDES = ("source", "target")
FIGURES = ("requests", "retries", "rate_limit_wait_s", "shared_budget")
DIRECTIONS = {"read": "reads", "write": "writes"}


def _seconds(start: str | None, end: str | None) -> float | None:
    try:
        if start and end:
            return round(
                (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3
            )
    except ValueError:
        return None
    return None


def _stage(name: str, start: str | None, end: str | None) -> dict[str, Any] | None:
    if not start or not end:
        return None
    return {"stage": name, "started_at": start, "ended_at": end, "seconds": _seconds(start, end)}


def stages(
    store: StagingStore, run: Mapping[str, Any], verify: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The stages of the latest run and the verify after it, in time order: extract (the first
    to the last record staged in the run), load (the first to the last record loaded or
    failed), verify (as it recorded itself)."""
    start, end = run.get("started_at"), run.get("ended_at") or "9999"
    found: list[dict[str, Any] | None] = []
    if start and run.get("command") in ("extract", "run"):
        row = store.db.execute(
            "SELECT min(staged_at), max(staged_at) FROM records WHERE staged_at BETWEEN ? AND ?",
            [start, end],
        ).fetchone()
        found.append(_stage("extract", *row))
    if start and run.get("command") in ("load", "run"):
        row = store.db.execute(
            "SELECT min(updated_at), max(updated_at) FROM ledger"
            " WHERE status IN ('done', 'failed') AND updated_at BETWEEN ? AND ?",
            [start, end],
        ).fetchone()
        found.append(_stage("load", *row))
    if verify and start and str(verify.get("started_at") or "") >= start:
        found.append(_stage("verify", verify.get("started_at"), verify.get("ended_at")))
    return [stage for stage in found if stage is not None]


def recent(store: StagingStore, limit: int = 10) -> list[dict[str, Any]]:
    """The last runs, newest first: command, outcome, times."""
    return [
        {
            "id": run["id"],
            "command": run["command"],
            "outcome": run["outcome"] or "running or interrupted",
            "started_at": run["started_at"],
            "ended_at": run["ended_at"],
            "seconds": _seconds(run["started_at"], run["ended_at"]),
        }
        for run in store.recent_runs(limit)
    ]


def per_service(
    details: Mapping[str, Any], counts: list[dict[str, Any]], services: Sequence[Service]
) -> list[dict[str, Any]]:
    """Each service with something to show: its entities' counts and, per side, its
    requests, retries, seconds waited on rate limiting, and its shared budgets' figures."""
    by_entity = {row["entity"]: row for row in counts}
    shown = []
    for service in services:
        rows = [by_entity[e.name] for e in service.entities if e.name in by_entity]
        sides = {
            side: {name: details[f"{service.name}_{side}_{name}"] for name in FIGURES
                   if f"{service.name}_{side}_{name}" in details}
            for side in SIDES
        }  # fmt: skip
        sides = {side: figures for side, figures in sides.items() if figures}
        counted = any(_positive(row[c]) for row in rows for c in ("staged", "to_load"))
        if counted or any(f.get("requests") for f in sides.values()):
            shown.append({"name": service.name, "counts": rows, "sides": sides})
    return shown


def _positive(count: Any) -> bool:
    """A count above zero ("-" is a count that does not apply)."""
    return isinstance(count, int) and count > 0


def rate_lines(details: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One line per service, side and direction whose budget was recorded: its name as people
    say it ("tracker target, writes"), its points (seconds, requests per second) and whether
    it moved at all (a fixed budget draws a flat line that says nothing)."""
    lines = []
    for key, value in sorted(details.items()):
        if not key.endswith("_rate_history") or not isinstance(value, dict):
            continue
        service, _, side = key.removesuffix("_rate_history").rpartition("_")
        for direction, points in sorted(value.items()):
            if not points:
                continue
            lines.append({
                "key": f"{service}_{side} {direction}",
                "name": f"{service} {side}, {DIRECTIONS.get(direction, direction)}",
                "points": points,
                "varied": len({rate for _, rate in points}) > 1,
            })  # fmt: skip
    return lines


def next_step(
    store: StagingStore,
    verify: Mapping[str, Any] | None,
    run_end: str | None,
    services: Sequence[Service],
) -> str:
    """What to do next: what `haul status` would say, with `verify` as the last verify (unless
    it came before the run ended: then verify again)."""
    from haul.pipelines.commands.status import gather_status, verify_after

    status = gather_status(store, services)
    status.verify = verify_after(verify, run_end)
    return status.next_action()
