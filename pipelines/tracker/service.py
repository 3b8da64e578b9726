"""The tracker as a service: its layers in load order, and the target context they load into.

The tracker is cut along DESIGN's load layers, one folder each, each handing the service one
`Layer` (`pipelines.tracker.layer`: its entities, export tables, plans, extract parts and
checks); the service concatenates them in the order of `LAYERS`::

    organisation/   dictionaries, fields, queues, components, versions, boards, sprints
    issues/         issues and their comments, worklogs, attachments, checklists, links
    entities/       projects, portfolios, goals and what hangs off them
    planning/       saved filters, dashboards, remote links, autoactions
    backfill/       form answers loaded as issues
    sync/           status changes, moves, deletions at the source (planned last)
    flow/           the analysts' flow model (export tables, a check of [model])
    checks/         what `haul check` finds

The load, plan and verify need the target's dictionaries, queues and users: the target context
(`pipelines.tracker.target.TrackerTarget`) is built once per command and handed to every part:
it stages them under `target.` (not for verify, which writes nothing but its results), builds
the transform from both orgs' staged dictionaries, and its preflight stops before any write if
the target lacks a queue or a dictionary key. Back-filled form answers load here as issues
(`pipelines.tracker.backfill`).
"""

from __future__ import annotations

from collections.abc import Mapping

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.pages import Page
from haul.pipelines.export.tables import Registry
from haul.pipelines.findings import Finding
from haul.pipelines.forms.staged import check_rules
from haul.pipelines.services import Details, Entity, SourceParts, TargetParts, core_options
from haul.pipelines.shards.units import Unit
from haul.pipelines.streams import ExtractStats
from haul.pipelines.tracker.backfill.layer import BACKFILL
from haul.pipelines.tracker.checks.layer import CHECKS, checked_target
from haul.pipelines.tracker.entities.layer import ENTITIES
from haul.pipelines.tracker.flow.layer import FLOW
from haul.pipelines.tracker.issues.layer import ISSUES
from haul.pipelines.tracker.layer import Layer, joined
from haul.pipelines.tracker.organisation.layer import ORGANISATION, stage_target, tracker_units
from haul.pipelines.tracker.planning.layer import PLANNING, held_in_target
from haul.pipelines.tracker.sync.layer import SYNC
from haul.pipelines.tracker.target import TrackerTarget
from haul.state.store import StagingStore

# DESIGN's load order: the organisation as configured, the trees and the links between them,
# the planning layer (its entities first, autoactions last); then the back-filled answers (their
# issues stand alone) and the sync (its deletions are found once everything else is planned);
# the flow model and the checks load nothing. The engine plans, and the reports list, in this
# order; the specs' phases order the load itself.
LAYERS: tuple[Layer, ...] = (ORGANISATION, ISSUES, ENTITIES, PLANNING, BACKFILL, SYNC, FLOW, CHECKS)
ENTITIES_IN_ORDER = tuple(entity for layer in LAYERS for entity in layer.entities)
# the export lists the issues' tables first, then what is derived from them, the planning layer
# and the organisation's structure (`haul export --describe`, the docs' table reference)
TABLES_IN_ORDER = (ISSUES, FLOW, PLANNING, ENTITIES, ORGANISATION)


class TrackerService:
    """The issue tracker: issues and everything hanging off them."""

    name: str = "tracker"
    entities: tuple[Entity, ...] = ENTITIES_IN_ORDER

    @property
    def tables(self) -> Registry:
        return Registry.of(table for layer in TABLES_IN_ORDER for table in layer.tables)

    @property
    def pages(self) -> tuple[Page, ...]:
        return tuple(page for layer in LAYERS for page in layer.pages)

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        # in the layers' order: moves followed before the issues are planned, deletions last
        return {name: plan for layer in LAYERS for name, plan in layer.plans(config).items()}

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
        parts = [layer.source(client, store, config) for layer in LAYERS if layer.source]

        async def details(stats: ExtractStats) -> Details:
            found: Details = {}
            for part in parts:
                if part.details is not None:
                    found |= await part.details(stats)
            return found

        streams = [stream for part in parts for stream in part.streams]
        return SourceParts(streams, [drain for part in parts for drain in part.drains], details)

    async def target(
        self, config: Config, client: TrackerClient, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        """Every layer's part of the load into one target org, the context built once."""
        if not read_only:
            await stage_target(client, store)
        target = await TrackerTarget.of(config, client, store, read_only=read_only)
        target.preflight()
        check_rules(config, store, "tracker")
        return joined([await layer.target(target) for layer in LAYERS if layer.target])

    async def shard_units(self, config: Config, client: TrackerClient) -> list[Unit]:
        """A shard manifest's units: one per queue, cut into windows when large."""
        return await tracker_units(config, client)

    def held_in_target(self, store: StagingStore) -> list[str]:
        """Its triggers and autoactions a killed load left switched off (see `quiet_rules`)."""
        return held_in_target(store)

    async def checks(
        self, config: Config, client: TrackerClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        target = await checked_target(config, client, store, side)
        found = []
        for layer in LAYERS:
            if layer.checks is not None:
                found += await layer.checks(config, client, store, side, target)
        return found

    async def checks_across(
        self,
        config: Config,
        source: TrackerClient,
        target: TrackerClient,
        store: StagingStore | None,
    ) -> list[Finding]:
        """Where the target queues' permissions differ from the source queues' (read-only)."""
        found = []
        for layer in LAYERS:
            if layer.checks_across is not None:
                found += await layer.checks_across(config, source, target, store)
        return found


TRACKER = TrackerService()
