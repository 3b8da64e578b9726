"""The tracker as a service of the runner: its client, extract parts and load parts.

The load needs the target's dictionaries, queues and users: they are staged (under
`target.`) when the load starts, the transform is built from both orgs' staged dictionaries,
and the preflight stops before any write if the target lacks a queue or a dictionary key.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import structlog

from haul.connectors.errors import HaulError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.forms.backfill import TrackerBackfill, check_rules, tracker_plans
from haul.pipelines.services import Details, SourceParts, TargetParts, core_options
from haul.pipelines.streams import NOT_STAGED, Extractor, ExtractStats, not_staged
from haul.pipelines.tracker.drain import IssueDrain
from haul.pipelines.tracker.probes import TargetProbe
from haul.pipelines.tracker.specs import PLANS, TrackerLoad
from haul.pipelines.tracker.streams import IssueScroll, dictionary_streams
from haul.pipelines.tracker.transform import (
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


class PreflightError(HaulError):
    """The load cannot start: the target lacks something the staged data needs."""


class TrackerService:
    """The issue tracker: issues and everything hanging off them."""

    name: str = "tracker"
    staged_of: Mapping[str, str] = {"comment_attachment": "attachment"}
    optional: tuple[str, ...] = ("backfill_issue", "backfill_attachment")
    loadable: tuple[str, ...] = tuple(PLANS)
    staged_only: tuple[str, ...] = ("changelog",)  # no import endpoint: staged for exports only

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        return {**PLANS, **tracker_plans(config)}

    def configured(self, endpoint: Endpoint) -> bool:
        return bool(getattr(endpoint, "tracker_url", None))

    def client(
        self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning
    ) -> TrackerClient:
        # configured() made sure of the URL
        return TrackerClient.connect(
            base_url=endpoint.tracker_url or "", **core_options(endpoint, environ, tuning)
        )

    async def source(
        self, config: Config, client: TrackerClient, store: StagingStore
    ) -> SourceParts:
        tuning = config.tuning
        scrolls = [
            IssueScroll(
                client,
                queue,
                narrowing=config.scope.query,
                per_scroll=tuning.per_scroll,
                ttl_ms=tuning.scroll_ttl_ms,
                lookback=timedelta(minutes=tuning.lookback_minutes),
            )
            for queue in config.scope.queues
        ]
        drain = IssueDrain(
            client,
            store,
            concurrent=tuning.concurrency > 1,
            changelog=stage_changelog(store, *config.stages_changelog),
        )

        async def details(stats: ExtractStats) -> Details:
            return {
                "source_issue_count": await _issue_count(
                    client, config.scope.queues, config.scope.query
                ),
                "issues_staged": stats.staged["issue"],
                "issues_drained": stats.drained["issue"],
                "attachment_bytes": drain.attachment_bytes,
                "scroll_restarts": sum(scroll.restarts for scroll in scrolls),
            }

        return SourceParts([*dictionary_streams(client), *scrolls], [drain], details)

    async def target(
        self, config: Config, client: TrackerClient, store: StagingStore
    ) -> TargetParts:
        await Extractor(store, dictionary_streams(client, prefix="target.")).run()
        transform = build_transform(store, config)
        preflight(store, transform, config)
        probe = TargetProbe(client, target_uids(store))
        queue_map = transform.queues
        target_queues = sorted({queue_map.queue(queue) for queue in config.scope.queues})

        async def in_target() -> dict[str, int]:
            return {"issue": await _issue_count(client, target_queues)}

        def unmapped() -> list[str]:
            return sorted(transform.users.unmapped)

        check_rules(config, store, "tracker")
        backfill = TrackerBackfill(
            client,
            store,
            config,
            transform.users.target_logins,
            transform.dictionaries.target_ids,
        )
        backfill.preflight()
        specs = TrackerLoad(client, store, transform, probe).specs() + backfill.specs()
        return TargetParts(specs, in_target, unmapped)


TRACKER = TrackerService()


def build_transform(store: StagingStore, config: Config) -> Transform:
    """The maps the load needs, from the staged dictionaries and users of both orgs."""
    source_logins = {row.source_id: row.raw["login"] for row in store.iter_records("user")}
    target_logins = {row.raw["login"] for row in store.iter_records("target.user")}
    explicit = read_users_csv(config.mapping.users_file) if config.mapping.users_file else {}
    source_keys = {
        kind: {row.source_id: row.raw.get("key", row.source_id) for row in store.iter_records(kind)}
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
    """Target login -> target uid, from the target's staged users."""
    return {row.raw["login"]: str(row.raw["uid"]) for row in store.iter_records("target.user")}


def preflight(store: StagingStore, transform: Transform, config: Config) -> None:
    """Stop before any write when the target lacks a queue or a dictionary key we need."""
    target_queues = {row.source_id for row in store.iter_records("target.queue")}
    wanted = {transform.queues.queue(queue) for queue in config.scope.queues}
    wanted |= {str(rule.queue) for rule in config.backfill if rule.into == "tracker"}
    if missing_queues := sorted(wanted - target_queues):
        raise PreflightError(
            f"cannot load: the target org has no queue {', '.join(missing_queues)}: create it, "
            "or map the queue elsewhere"
        )
    missing = transform.dictionaries.missing(row.raw for row in store.iter_records("issue"))
    if missing:
        raise MissingDictionaryValues(missing)


async def _issue_count(client: TrackerClient, queues: Any, narrowing: str | None = None) -> int:
    total = 0
    for queue in queues:
        query = f"Queue: {queue}" + (f" AND {narrowing}" if narrowing else "")
        total += await client.count_issues(query=query)
    return total


def stage_changelog(store: StagingStore, wanted: bool, because: str) -> bool:
    """Say in the store whether this extract stages changelogs and `because` of which setting
    (`haul export` warns when it does not); when they are wanted again after extracts that
    skipped them, every issue is drained once more, since its drained mark was set without
    its changelog."""
    skipped = not_staged(store)
    with store.transaction():
        if wanted and "changelog" in skipped:
            again = store.forget_drained("issue")
            log.info("changelog_staged_again", issues_to_drain=again)
            skipped.pop("changelog")
        elif not wanted:
            skipped["changelog"] = because
        store.set_checkpoint(NOT_STAGED, skipped)
    return wanted
