"""The runner: composes the stages into the commands (extract, load, run) and records each run.

Every command opens the staging store, takes its run lock, builds the clients from the config
and calls the stages; the CLI is a thin layer over these functions.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import structlog

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, Endpoint
from haul.pipelines.extract import IssueExtractor, stage_dictionaries
from haul.pipelines.load import Loader, plan_load
from haul.pipelines.probes import TargetProbe
from haul.pipelines.progress import Progress
from haul.pipelines.report import EntityCounts, entity_counts
from haul.pipelines.transform import (
    DictionaryMap,
    MissingDictionaryValues,
    QueueMap,
    Transform,
    UserMap,
    read_users_csv,
)
from haul.state.store import StagingStore

log = structlog.get_logger(__name__)

DICTIONARY_KINDS = ("status", "issuetype", "priority", "resolution", "linktype")


class PreflightError(Exception):
    """The load cannot start: the target lacks something the staged data needs."""


@dataclass
class RunSummary:
    command: str
    counts: list[EntityCounts] = field(default_factory=list)
    unmapped_users: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(row.failed for row in self.counts)

    @property
    def complete(self) -> bool:
        """Every loadable record staged is loaded, and the target counts at least those issues."""
        loaded_issues = sum(row.loaded for row in self.counts if row.entity == "issue")
        if self.details.get("target_issue_count", loaded_issues) < loaded_issues:
            return False
        return all(row.loaded == row.staged for row in self.counts if row.loadable)


def tracker_client(endpoint: Endpoint, environ: Mapping[str, str]) -> TrackerClient:
    return TrackerClient.connect(
        base_url=endpoint.tracker_url,
        token=endpoint.token(environ),
        org_id=endpoint.org_id,
        cloud_org_id=endpoint.cloud_org_id,
        auth_scheme=endpoint.auth_scheme,
        read_rate=endpoint.read_rps,
        write_rate=endpoint.write_rps,
    )


@asynccontextmanager
async def open_clients(
    config: Config, environ: Mapping[str, str], *sides: str
) -> AsyncIterator[list[TrackerClient]]:
    """Clients for the named sides ("source", "target"): every token is read before any request,
    then each is checked with a cheap call (AuthError names the service and the org)."""
    clients = [tracker_client(getattr(config, side), environ) for side in sides]
    async with AsyncExitStack() as stack:
        for client in clients:
            await stack.enter_async_context(client)
        for client in clients:
            await client.myself()
        yield clients


async def extract(
    config: Config, *, progress: Progress | None = None, environ: Mapping[str, str] = os.environ
) -> RunSummary:
    async with open_clients(config, environ, "source", "target") as (source, target):
        with StagingStore.open(config.staging_path) as store, store.run("extract") as run:
            summary = await _extract(config, store, source, target, progress or Progress())
            summary.counts = entity_counts(store)  # `run` counts once, after its load
            run.counts.update(summary.details)
            return summary


async def load(
    config: Config,
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] = os.environ,
    retry_failed: bool = False,
) -> RunSummary:
    async with open_clients(config, environ, "target") as (target,):  # the source may be gone
        with StagingStore.open(config.staging_path) as store, store.run("load") as run:
            summary = await _load(config, store, target, progress or Progress(), retry_failed)
            run.counts.update(summary.details, complete=summary.complete)
            return summary


async def run_all(
    config: Config,
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] = os.environ,
    retry_failed: bool = False,
) -> RunSummary:
    """Extract, load, then compare counts: staged against loaded, and the target's own count."""
    progress = progress or Progress()
    async with open_clients(config, environ, "source", "target") as (source, target):
        with StagingStore.open(config.staging_path) as store, store.run("run") as run:
            extracted = await _extract(config, store, source, target, progress)
            loaded = await _load(config, store, target, progress, retry_failed)
            loaded.command = "run"
            loaded.details = {**extracted.details, **loaded.details}
            loaded.details["target_issue_count"] = await _target_issue_count(config, target)
            run.counts.update(loaded.details, complete=loaded.complete)
            return loaded


async def _extract(
    config: Config,
    store: StagingStore,
    source: TrackerClient,
    target: TrackerClient,
    progress: Progress,
) -> RunSummary:
    await stage_dictionaries(source, store)
    await stage_dictionaries(target, store, prefix="target.")
    extractor = IssueExtractor(
        client=source,
        store=store,
        progress=progress,
        concurrency=config.tuning.concurrency,
        per_scroll=config.tuning.per_scroll,
        scroll_ttl_ms=config.tuning.scroll_ttl_ms,
        lookback=timedelta(minutes=config.tuning.lookback_minutes),
    )
    stats = await extractor.run(config.scope.queues, config.scope.query)
    details = {
        "source_issue_count": await source_issue_count(config, source),
        "issues_staged": stats.issues_staged,
        "issues_drained": stats.issues_drained,
        "attachment_bytes": stats.attachment_bytes,
        "scroll_restarts": stats.scroll_restarts,
    }
    log.info("extract_finished", **details)
    return RunSummary("extract", details=details)


async def _load(
    config: Config,
    store: StagingStore,
    target: TrackerClient,
    progress: Progress,
    retry_failed: bool,
) -> RunSummary:
    await stage_dictionaries(target, store, prefix="target.")
    transform = build_transform(store, config)
    preflight(store, transform, config)
    planned = plan_load(store)
    if retry_failed:
        store.ledger.retry_failed()
    probe = TargetProbe(target, store.ledger, target_uids(store))
    loader = Loader(
        target, store, transform, probe, progress=progress, concurrency=config.tuning.concurrency
    )
    stats = await loader.run()
    details = {
        "planned": planned,
        "loaded": stats.done,
        "failed": stats.failed,
        "reconciled_found": stats.reconciled_found,
        "reconciled_missing": stats.reconciled_missing,
        "ambiguous_writes": stats.ambiguous,
        "issues_refreshed": stats.refreshed,
    }
    log.info("load_finished", **details)
    return RunSummary(
        "load",
        counts=entity_counts(store),
        unmapped_users=sorted(transform.users.unmapped),
        details=details,
    )


def build_transform(store: StagingStore, config: Config) -> Transform:
    """The maps the load needs, from the staged dictionaries and users of both orgs."""
    source_logins = {row.source_id: row.raw["login"] for row in store.iter_records("user")}
    target_logins = {row.raw["login"] for row in store.iter_records("target.user")}
    explicit = read_users_csv(config.mapping.users_file) if config.mapping.users_file else {}
    source_keys = {
        kind: {
            row.source_id: row.raw.get("key", row.source_id)
            for row in store.iter_records(kind)
        }
        for kind in DICTIONARY_KINDS
    }
    target_ids = {
        kind: {
            row.raw.get("key", row.source_id): row.raw["id"]
            for row in store.iter_records(f"target.{kind}")
        }
        for kind in DICTIONARY_KINDS
    }
    return Transform(
        queues=QueueMap(dict(config.mapping.queues)),
        users=UserMap(source_logins, target_logins, explicit, config.mapping.default_user),
        dictionaries=DictionaryMap(source_keys, target_ids),
        unique_prefix=f"haul:{config.source.org}",
    )


def target_uids(store: StagingStore) -> dict[str, str]:
    return {
        row.raw["login"]: str(row.raw["uid"]) for row in store.iter_records("target.user")
    }


def preflight(store: StagingStore, transform: Transform, config: Config) -> None:
    """Stop before any write when the target lacks a queue or a dictionary key we need."""
    target_queues = {row.source_id for row in store.iter_records("target.queue")}
    wanted = {transform.queues.queue(queue) for queue in config.scope.queues}
    if missing_queues := sorted(wanted - target_queues):
        raise PreflightError(
            f"the target org has no queue {', '.join(missing_queues)}: create it, or map the queue elsewhere"
        )
    missing = transform.dictionaries.missing(row.raw for row in store.iter_records("issue"))
    if missing:
        raise MissingDictionaryValues(missing)


async def _target_issue_count(config: Config, target: TrackerClient) -> int:
    queue_map = QueueMap(dict(config.mapping.queues))
    total = 0
    for queue in sorted({queue_map.queue(queue) for queue in config.scope.queues}):
        total += await target.count_issues(query=f"Queue: {queue}")
    return total


async def source_issue_count(config: Config, source: TrackerClient) -> int:
    total = 0
    for queue in config.scope.queues:
        query = f"Queue: {queue}" + (f" AND {config.scope.query}" if config.scope.query else "")
        total += await source.count_issues(query=query)
    return total
