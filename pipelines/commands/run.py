"""The runner: composes the stages into the commands (extract, load, run) and records each run.

Every command opens the staging store, takes its run lock, builds a client for each configured
service of the org it needs (extract: the source only; load: the target only), and runs the
stages over every service the same way; the CLI is a thin layer over these functions.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from structlog.contextvars import bound_contextvars

from haul.connectors.errors import HaulError, StorageError
from haul.pipelines.commands.budgets import kept_budgets
from haul.pipelines.config import Config, Endpoint
from haul.pipelines.engine import (
    LoadEngine,
    hold_back,
    hold_back_unplanned,
    plan_ledger,
    resend_what_shows,
    retry_failed_rows,
)
from haul.pipelines.progress import Progress
from haul.pipelines.report.counts import EntityCounts, entity_counts, in_use
from haul.pipelines.report.run import reporting
from haul.pipelines.services import Service, plans_of
from haul.pipelines.specs import EntitySpec, Phase, Ref
from haul.pipelines.streams import NOT_STAGED, Extractor, not_staged
from haul.state.errors import StoreAccessError, StoreError, store_errors
from haul.state.runs import RunHandle
from haul.state.store import StagingStore
from haul.state.targets import Mismatch, Target

log = structlog.get_logger(__name__)

PLANNED_AT = "ledger.planned"  # the newest staged_at the ledger was planned from
# what the stages' progress lines count, said once when each starts (off a terminal)
EXTRACT_LEGEND = (
    "X staged: records read from the source into the staging store by this run (the table's "
    "staged column); X drained: records whose comments, files and other sub-records were fetched"
)
LOAD_LEGEND = "records loaded: records sent to the target by this run, of those waiting to load"


@dataclass
class RunSummary:
    """What a command did: per-entity counts and the figures of its stages."""

    command: str
    counts: list[EntityCounts] = field(default_factory=list)
    unmapped_users: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    problems: int = 0  # records the extract could not stage whole (store.problems)
    in_target: dict[str, int] = field(default_factory=dict)  # entity -> the target's own count

    @property
    def failed(self) -> int:
        return sum(row.failed for row in self.counts)

    @property
    def waiting(self) -> int:
        """Records waiting for one a later run brings in (a link to a queue not migrated yet)."""
        return sum(row.waiting for row in self.counts)

    @property
    def complete(self) -> bool:
        """Every loadable record staged is loaded (or waits for a later run, named), and the
        target's own count of each entity it can count is at least what was loaded."""
        if any(self.in_target.get(row.entity, row.loaded) < row.loaded for row in self.counts):
            return False
        loadable = (row for row in self.counts if row.loadable)
        return all(row.loaded + row.waiting == row.to_load for row in loadable)


@dataclass(frozen=True)
class Portion:
    """The share of a whole run one part of a sharded migration does (`pipelines.shards`):
    the listings it skips (staged entities another part stages) and the load phases it
    holds back: their records wait, named, for the part that loads them."""

    skip_streams: frozenset[str] = frozenset()  # named in the store as not staged, and why
    skip_reason: str = ""
    held_from: Phase | None = None  # records of this phase and later are held
    held_reason: str = ""
    hold_unplanned: bool = False  # and records that require one this store does not plan
    # a checkpoint: while it says {"pending": true}, every loaded text that shows files
    # `shown_apart` from it (in the store given) is written again where the store now knows
    # more of them (`engine.resend_what_shows`)
    resend_shown_mark: str | None = None
    shown_apart: Callable[[StagingStore], Callable[[Ref, list[Ref]], bool]] | None = None


WHOLE = Portion()  # an ordinary run: everything


@dataclass
class Stage:
    """What every stage is handed: the config, the services, the store, progress and the stop
    flag."""

    config: Config
    services: Sequence[Service]
    store: StagingStore
    progress: Progress
    stop_requested: Callable[[], bool] = lambda: False
    portion: Portion = WHOLE


class Interrupted(HaulError):
    """A signal asked the run to stop: it finished what was under way and committed."""

    interrupts_run = True  # recorded as interrupted, not failed

    def __init__(self) -> None:
        super().__init__("stopped; run the same command to resume")


@contextmanager
def open_store(path: Path) -> Iterator[StagingStore]:
    """The staging store at `path`; what goes wrong with its file is a StorageError."""
    try:
        with StagingStore.open(path) as store, store_errors(path):
            yield store
    except StoreError as exc:
        raise StorageError(str(exc)) from exc


class TargetChangedError(HaulError):
    """The config names another target than the store loaded: nothing was written (exit 2)."""

    exit_code = 2

    def __init__(self, path: Path, differ: Mapping[str, Mismatch]) -> None:
        said = "; ".join(
            f"{service}: the store loaded {recorded}, the config names {wanted}"
            for service, (recorded, wanted) in sorted(differ.items())
        )
        super().__init__(
            f"config error: [target] is not the target the staging store {path} loaded "
            f"({said}); nothing was written: set [target] back to what the store loaded, or "
            "point [staging] path at a new store for the other one"
        )


def claim_target(config: Config, target: Endpoint, *, record: bool = True) -> None:
    """Before a command writes to `target`: the store records it at its first write, and
    refuses another org with TargetChangedError (its ledger's target ids mean nothing there).
    `record` False (a dry run) only refuses."""
    wanted = {
        service: Target(url, target.org_key, target.org)
        for service, url in target.service_urls.items()
    }
    with open_store(config.staging_path) as store:
        differ = store.targets.claim(wanted, record=record)
    if differ:
        raise TargetChangedError(config.staging_path, differ)


@contextmanager
def read_store(path: Path) -> Iterator[StagingStore]:
    """The staging store at `path` for a command that only reads it (`haul status`): opened
    as every command opens it, or, where haul may not write it (a read-only file or folder,
    a store copied off a server), read-only as it is; a StorageError when neither works."""
    try:
        store = StagingStore.open(path)
    except StoreAccessError:
        log.info("store_read_only", path=str(path))
        store = _read_only(path)
    except StoreError as exc:
        raise StorageError(str(exc)) from exc
    try:
        with store, store_errors(path):
            yield store
    except StoreError as exc:
        raise StorageError(str(exc)) from exc


def _read_only(path: Path) -> StagingStore:
    try:
        return StagingStore.open_readonly(path)
    except StoreError as exc:
        raise StorageError(
            f"{exc} (haul may not write the store, and cannot read it read-only either: a "
            "store a killed run left in WAL mode needs its -wal and -shm files or a writable "
            "folder)"
        ) from exc


@contextmanager
def staged_run(
    config: Config, services: Sequence[Service], command: str, *sides: list[tuple[Service, Any]]
) -> Iterator[tuple[StagingStore, RunHandle]]:
    """The store opened, the run recorded, and its reports written however it ends; the
    budgets of the clients on `sides` start where the last run left them, and are kept."""
    with (
        open_store(config.staging_path) as store,
        reporting(store, services),  # report.json and report.html, however the run ends
        recorded_run(store, command) as run,
        kept_budgets(store, (client for side in sides for _, client in side)),
    ):
        yield store, run


@contextmanager
def recorded_run(store: StagingStore, command: str) -> Iterator[RunHandle]:
    """Hold the store's run lock and record the run; every log line inside carries its id."""
    with store.run(command) as run, bound_contextvars(run_id=run.id, command=command):
        yield run


@asynccontextmanager
async def open_clients(
    config: Config,
    services: Sequence[Service],
    environ: Mapping[str, str],
    *endpoints: Endpoint | None,
) -> AsyncIterator[list[list[tuple[Service, Any]]]]:
    """For each endpoint, a client for every service configured on it: every token is read
    before any request, then each is checked with a cheap call (AuthError names the service
    and the org)."""
    sides = [
        [
            (service, service.client(endpoint, environ, config.tuning))
            for service in services
            if service.configured(endpoint)
        ]
        if endpoint is not None
        else []
        for endpoint in endpoints
    ]
    async with AsyncExitStack() as stack:
        for _, client in (pair for side in sides for pair in side):
            await stack.enter_async_context(client)
        for _, client in (pair for side in sides for pair in side):
            await client.myself()
        yield sides


async def extract(
    config: Config,
    services: Sequence[Service],
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] = os.environ,
    stop_requested: Callable[[], bool] = lambda: False,
) -> RunSummary:
    """Stage the source: needs only the source org (a nightly export has no target)."""
    async with open_clients(config, services, environ, config.source) as (sources,):
        with staged_run(config, services, "extract", sources) as (store, run):
            stage = Stage(config, services, store, progress or Progress(), stop_requested)
            summary = await _extract(stage, sources)
            _raise_if_stopped(stage)
            summary.counts = entity_counts(store, in_use(store, services))
            summary.problems = store.problems.count()
            run.counts.update(summary.details)
            return summary


async def load(
    config: Config,
    services: Sequence[Service],
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] = os.environ,
    retry_failed: bool = False,
    stop_requested: Callable[[], bool] = lambda: False,
    portion: Portion = WHOLE,
) -> RunSummary:
    """Load what is staged into the target; the source may be gone."""
    target = config.require_target("load")
    async with open_clients(config, services, environ, target) as (targets,):
        claim_target(config, target)
        with staged_run(config, services, "load", targets) as (store, run):
            stage = Stage(config, services, store, progress or Progress(), stop_requested, portion)
            summary = await _load(stage, targets, retry_failed)
            _raise_if_stopped(stage)
            summary.problems = store.problems.count()
            run.counts.update(summary.details, complete=summary.complete)
            run.counts["unmapped_users"] = summary.unmapped_users  # for the report
            return summary


async def run_all(
    config: Config,
    services: Sequence[Service],
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] = os.environ,
    retry_failed: bool = False,
    stop_requested: Callable[[], bool] = lambda: False,
    portion: Portion = WHOLE,
) -> RunSummary:
    """Extract, load, then compare counts: staged against loaded, and the target's own count."""
    target = config.require_target("run")
    async with open_clients(config, services, environ, config.source, target) as (
        sources,
        targets,
    ):
        claim_target(config, target)
        with staged_run(config, services, "run", sources, targets) as (store, run):
            stage = Stage(config, services, store, progress or Progress(), stop_requested, portion)
            extracted = await _extract(stage, sources)
            _raise_if_stopped(stage)
            loaded = await _load(stage, targets, retry_failed)
            _raise_if_stopped(stage)
            loaded.command = "run"
            loaded.details = {**extracted.details, **loaded.details}
            loaded.problems = store.problems.count()
            run.counts.update(loaded.details, complete=loaded.complete)
            run.counts["unmapped_users"] = loaded.unmapped_users  # for the report
            return loaded


def _raise_if_stopped(stage: Stage) -> None:
    if stage.stop_requested():
        raise Interrupted()


async def _extract(stage: Stage, sources: list[tuple[Service, Any]]) -> RunSummary:
    skip = stage.portion.skip_streams
    _say_not_staged(stage.store, skip, stage.portion.skip_reason)
    parts = [await service.source(stage.config, client, stage.store) for service, client in sources]
    extractor = Extractor(
        stage.store,
        [stream for part in parts for stream in part.streams if stream.entity not in skip],
        [drain for part in parts for drain in part.drains if drain.parent not in skip],
        progress=stage.progress,
        concurrency=stage.config.tuning.concurrency,
        stop_requested=stage.stop_requested,
    )
    with stage.progress.stage("extract", EXTRACT_LEGEND):
        stats = await extractor.run()
    details: dict[str, Any] = {}
    for part in parts:
        if part.details is not None:
            details.update(await part.details(stats))
    details["planned"] = plan_if_staged_since(stage.store, stage.config, stage.services)
    details.update(_traffic(sources, "source"))
    log.info("extract_finished", **details)
    return RunSummary("extract", details=details)


def _say_not_staged(store: StagingStore, skipped: frozenset[str], because: str) -> None:
    """Name in the store the listings this portion skips: its plans then plan for the whole
    scope what those listings' records would have said they need (the organisation)."""
    if skipped:
        store.set_checkpoint(NOT_STAGED, {**not_staged(store), **dict.fromkeys(skipped, because)})


def plan_if_staged_since(store: StagingStore, config: Config, services: Sequence[Service]) -> int:
    """Plan the ledger from the staged records, unless nothing was staged (and no plan was
    added or taken away) since the last plan."""
    every = plans_of(services, config)
    mark = {"staged_at": store.newest_staged_at(), "plans": sorted(every)}
    if mark["staged_at"] is not None and store.get_checkpoint(PLANNED_AT) == mark:
        return 0
    planned = plan_ledger(store, every)
    store.set_checkpoint(PLANNED_AT, mark)
    return planned


async def _load(stage: Stage, targets: list[tuple[Service, Any]], retry_failed: bool) -> RunSummary:
    store = stage.store
    plan_if_staged_since(store, stage.config, stage.services)
    parts = [await service.target(stage.config, client, store) for service, client in targets]
    if retry_failed:
        retry_failed_rows(store, [spec for part in parts for spec in part.specs])
    specs = _held_back([spec for part in parts for spec in part.specs], store, stage.portion)
    _resend_shown(store, specs, stage.portion)
    engine = LoadEngine(
        store,
        specs,
        progress=stage.progress,
        concurrency=stage.config.tuning.concurrency,
        stop_requested=stage.stop_requested,
    )
    engine.wake_waiting()  # the links this run can make now are expected too
    states = store.ledger.counts().values()
    stage.progress.expect("records loaded", sum(s.get("pending", 0) for s in states))
    with stage.progress.stage("load", LOAD_LEGEND):
        async with AsyncExitStack() as held:
            for part in parts:
                if part.holding is not None:
                    await held.enter_async_context(part.holding())
            stats = await engine.run()
    details: dict[str, Any] = {
        "loaded": stats.done,
        "failed": stats.failed,
        "waiting": stats.waiting,  # for a record a later run brings in: named by haul status
        "woken": stats.woken,  # waiting records this run could try again
        "reconciled_found": stats.reconciled_found,
        "reconciled_missing": stats.reconciled_missing,
        "ambiguous_writes": stats.ambiguous,
        "issues_refreshed": stats.refreshed,
        "changes_not_carried": stats.refresh_failed,  # kept as problems: haul failures
    }
    in_target: dict[str, int] = {}
    for part in parts:
        if part.in_target is not None:
            in_target.update(await part.in_target())
    details["not_carried"] = {key: n for part in parts for key, n in part.not_carried().items()}
    left_out = Counter(f"{r.entity}: {r.reason}" for part in parts for r in part.left_out())
    details["not_carried"].update(left_out)
    details["changes"] = {entity: n for part in parts for entity, n in part.changes().items()}
    details.update({f"target_{entity}_count": n for entity, n in in_target.items()})
    # a service that loads nothing here (forms: its answers go to the tracker or the wiki) has
    # no target to report; its client only checked its token
    loading = [pair for pair, part in zip(targets, parts, strict=True) if part.specs]
    details.update(_traffic(loading, "target"))
    log.info("load_finished", **details)
    return RunSummary(
        "load",
        in_target=in_target,
        counts=entity_counts(store, [service for service, _ in targets]),
        unmapped_users=sorted({user for part in parts for user in part.unmapped_users()}),
        details=details,
    )


def _held_back(specs: list[EntitySpec], store: StagingStore, portion: Portion) -> list[EntitySpec]:
    """The specs this portion loads; the pending records of those it holds back wait, named."""
    if portion.held_from is None:
        return specs
    held = [spec.name for spec in specs if spec.phase >= portion.held_from]
    hold_back(store, held, portion.held_reason)
    loaded = [spec for spec in specs if spec.name not in held]
    if portion.hold_unplanned:
        hold_back_unplanned(store, loaded, portion.held_reason)
    return loaded


def _resend_shown(store: StagingStore, specs: list[EntitySpec], portion: Portion) -> None:
    """While the portion's checkpoint asks for it, mark changed every loaded text that shows
    files apart from it (its refresh writes it again), and clear the mark in the same
    transaction."""
    mark = portion.resend_shown_mark
    if mark is None or not (store.get_checkpoint(mark) or {}).get("pending"):
        return
    with store.transaction():
        if portion.shown_apart is None:
            marked = resend_what_shows(store, specs)
        else:
            marked = resend_what_shows(store, specs, portion.shown_apart(store))
        log.info("texts_shown_again", rows=marked)
        store.set_checkpoint(mark, {"pending": False})


def _traffic(clients: list[tuple[Service, Any]], side: str) -> dict[str, Any]:
    """Requests, retries and seconds spent waiting on 429s, per service, for the report."""
    figures: dict[str, Any] = {}
    for service, client in clients:
        core = client.core
        figures[f"{service.name}_{side}_requests"] = core.requests_sent
        figures[f"{service.name}_{side}_retries"] = core.retries
        figures[f"{service.name}_{side}_rate_limit_wait_s"] = round(core.rate_limit_wait, 1)
        figures[f"{service.name}_{side}_rate_history"] = _relative(core.rate_history())
        if shared := core.shared_budget_figures():
            figures[f"{service.name}_{side}_shared_budget"] = shared
    return figures


def _relative(history: dict[str, list[tuple[float, float]]]) -> dict[str, list[list[float]]]:
    """Each budget's (seconds since its first change, requests per second), for the report's
    rate chart; at most 500 points a budget (a long run keeps its every other change)."""
    series = {}
    for direction, points in history.items():
        if not points:
            continue
        start = points[0][0]
        step = max(1, len(points) // 500)
        series[direction] = [[round(t - start, 2), round(rate, 1)] for t, rate in points[::step]]
    return series
