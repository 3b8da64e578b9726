"""The tracker as a service: its layers in load order, and the target context they load into.

One folder per load layer, each handing the service one `Layer` (`pipelines.tracker.layer`:
its entities, tables, plans, extract parts, checks, target part), joined in `LAYERS` order::

    organisation/   dictionaries, fields, queues, components, versions, boards, sprints
    issues/         the issue record: its scroll, import, moves, status walks, access list
    children/       what hangs under an issue: its drain, comments, worklogs, files, checklist
    links/          the links between issues, once both ends exist
    entities/       projects, portfolios, goals and what hangs off them
    planning/       saved filters, dashboards, remote links, autoactions
    backfill/       form answers loaded as issues
    changes/        deletions at the source (planned last), undo, the sync's preview
    flow/           the analysts' flow model (export tables, a check of [model])
    checks/         what `haul check` finds

The target context (`target.TrackerTarget`: both orgs' dictionaries, queues and users, staged
under `target.` except for verify) is built once per command and handed to every layer; its
preflight stops before any write if the target lacks a queue or a dictionary key.
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
from haul.pipelines.tracker.changes.layer import CHANGES
from haul.pipelines.tracker.checks.layer import CHECKS
from haul.pipelines.tracker.children.layer import CHILDREN
from haul.pipelines.tracker.entities.layer import ENTITIES
from haul.pipelines.tracker.flow.layer import FLOW
from haul.pipelines.tracker.issues.layer import ISSUES
from haul.pipelines.tracker.layer import Layer, joined
from haul.pipelines.tracker.links.layer import LINKS
from haul.pipelines.tracker.organisation import layer as organisation
from haul.pipelines.tracker.planning.layer import PLANNING, held_in_target
from haul.pipelines.tracker.target import TrackerTarget
from haul.state.store import StagingStore

# DESIGN's load order: the organisation, the trees and their links, the planning layer, the
# back-filled answers, the changes (deletions found once all else is planned); the flow model
# and the checks load nothing. Plans and reports follow it; the specs' phases order the load.
LAYERS: tuple[Layer, ...] = (
    organisation.ORGANISATION, ISSUES, CHILDREN, LINKS, ENTITIES, PLANNING, BACKFILL, CHANGES, FLOW, CHECKS,
)  # fmt: skip
# the export's order: the issues' tables, what is derived from them, planning, the structure
TABLES_IN_ORDER = (ISSUES, FLOW, PLANNING, ENTITIES, organisation.ORGANISATION)


class TrackerService:
    """The issue tracker, as its `layers` hand it (`LAYERS`, or a test's: one more kind)."""

    name: str = "tracker"

    def __init__(self, layers: tuple[Layer, ...] = LAYERS) -> None:
        self.layers = layers

    @property
    def entities(self) -> tuple[Entity, ...]:
        return tuple(entity for layer in self.layers for entity in layer.entities)

    @property
    def tables(self) -> Registry:
        return Registry.of(table for layer in TABLES_IN_ORDER for table in layer.tables)

    @property
    def pages(self) -> tuple[Page, ...]:
        return tuple(page for layer in self.layers for page in layer.pages)

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        # in the layers' order: moves followed before the issues are planned, deletions last
        return {name: plan for layer in self.layers for name, plan in layer.plans(config).items()}

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
        parts = [layer.source(client, store, config) for layer in self.layers if layer.source]

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
            await organisation.stage_target(client, store)
        target = await TrackerTarget.of(config, client, store, read_only=read_only)
        target.preflight()
        check_rules(config, store, "tracker")
        return joined([await layer.target(target) for layer in self.layers if layer.target])

    async def shard_units(self, config: Config, client: TrackerClient) -> list[Unit]:
        """A shard manifest's units: one per queue, cut into windows when large."""
        return await organisation.tracker_units(config, client)

    def held_in_target(self, store: StagingStore) -> list[str]:
        """Its triggers and autoactions a killed load left switched off (see `quiet_rules`)."""
        return held_in_target(store)

    async def checks(
        self, config: Config, client: TrackerClient, store: StagingStore | None, side: str
    ) -> list[Finding]:
        target = await organisation.checked_target(config, client, store, side)
        checks = [layer.checks for layer in self.layers if layer.checks]
        return [
            found for check in checks for found in await check(config, client, store, side, target)
        ]

    async def checks_across(
        self,
        config: Config,
        source: TrackerClient,
        target: TrackerClient,
        store: StagingStore | None,
    ) -> list[Finding]:
        """Where the target queues' permissions differ from the source queues' (read-only)."""
        checks = [layer.checks_across for layer in self.layers if layer.checks_across]
        return [found for check in checks for found in await check(config, source, target, store)]


TRACKER = TrackerService()
