"""What a service brings to haul: the one place a service plugs in.

A service gives, for one side of the config, a client; for a source org, the streams and
drains of its extract; for a target org, its entity specs, how `haul plan` decides and how
`haul verify` reads records back; for `haul check`, its own findings on each side and those
of comparing the two (the tracker's queue permissions); for `haul export`, its
tables; and, once, the entity kinds it stages and loads (`Entity`), from which every shared
module takes its counts. The engine, the runner, plan, verify, check, status, the reports and
the export iterate services and name none; `pipelines.registry` lists them.

    Service
      name, entities, tables, pages
      plans(config)                      ledger entity -> plan
      configured(endpoint), client(endpoint, environ, tuning)
      source(config, client, store)  -> SourceParts(streams, drains, details)
      target(config, client, store, read_only)
                                     -> TargetParts(specs, in_target, unmapped_users,
                                                    planner, verifier, not_carried, left_out,
                                                    changes, removals, preview)
      checks(config, client, store, side) -> [Finding]
      checks_across(config, source_client, target_client, store) -> [Finding]
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.pages import Page
from haul.pipelines.export.tables import Registry
from haul.pipelines.findings import Finding
from haul.pipelines.logs import hide_in_logs
from haul.pipelines.planner import Planner
from haul.pipelines.specs import EntitySpec
from haul.pipelines.streams import Drain, ExtractStats, Stream
from haul.pipelines.sync.preview import ChangePreview
from haul.pipelines.sync.references import SourceScan
from haul.pipelines.sync.removals import Removal
from haul.pipelines.verifying import Verifier
from haul.state.store import StagingStore

Details = dict[str, Any]


@dataclass(frozen=True)
class Entity:
    """One kind of record a service stages or loads, declared once beside its other parts.

    `name` is the ledger's (or, for a record never loaded, the staged) entity; `staged` the
    staged entity its rows load from when that is another (a comment's attachment loads from a
    staged attachment); `loads` False for what is staged for exports only; `optional` for a
    ledger entity shown only when something was planned for it (a back-fill); `files` when
    its staged records carry bytes in the blob store (with their listed `size`);
    `source_count` the extract detail that holds the source's own count of it.
    """

    name: str
    staged: str = ""
    loads: bool = True
    optional: bool = False
    files: bool = False
    source_count: str = ""

    @property
    def staged_as(self) -> str:
        """The staged entity this kind's records are read from."""
        return self.staged or self.name


@dataclass(frozen=True)
class LeftOut:
    """A staged record of a kind the scope cannot carry (a board whose queue is not
    migrated): never planned nor sent, but counted under `reason` and named, with `detail`,
    by check, plan, status and the report."""

    entity: str
    source_id: str
    reason: str
    detail: str = ""

    @property
    def why(self) -> str:
        return f"{self.reason} ({self.detail})" if self.detail else self.reason

    def line(self) -> str:
        return f"{self.entity} {self.source_id}: {self.why}"


@dataclass
class SourceParts:
    """One service's extract: its streams and drains, and the figures it reports after."""

    streams: list[Stream]
    drains: list[Drain] = field(default_factory=list)
    details: Callable[[ExtractStats], Awaitable[Details]] | None = None


@dataclass
class TargetParts:
    """One service's load into a target org: its specs, and what plan, verify and the report
    ask of it. Without a `planner`, `haul plan` decides with the specs' own `find`; without a
    `verifier`, `haul verify` reports its entities as not compared."""

    specs: list[EntitySpec]
    in_target: Callable[[], Awaitable[dict[str, int]]] | None = None  # the target's own counts
    unmapped_users: Callable[[], list[str]] = list
    planner: Planner | None = None
    verifier: Verifier | None = None
    # values the load left out of a record it still loaded: "field: reason" -> how many
    not_carried: Callable[[], dict[str, int]] = dict
    # whole records of a kind the scope cannot carry, never planned (`LeftOut`)
    left_out: Callable[[], list[LeftOut]] = list
    # what the load changed in the target per entity ("created", "updated", "moved",
    # "deleted") and what the source deleted ("deleted_at_source"): a sync's run details
    changes: Callable[[], dict[str, dict[str, int]]] = dict
    # how `haul undo` takes back each ledger entity it loads (pipelines.removals)
    removals: Mapping[str, Removal] = field(default_factory=dict)
    # what `haul plan` says a loaded record changed at the source makes the load do
    preview: ChangePreview | None = None
    # what `haul verify` looks for in the texts it reads back: references to the source
    references: SourceScan | None = None
    # what the service holds in the target while the load runs, given back once it is done
    # (the tracker: its triggers and autoactions switched off, so importing fires none)
    holding: Callable[[], AbstractAsyncContextManager[None]] | None = None


class Client(Protocol):
    """A service client: an async context manager with a cheap call that checks the token."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def myself(self) -> Any: ...


class Service(Protocol):
    """One service as every shared module sees it."""

    @property
    def name(self) -> str: ...

    @property
    def entities(self) -> tuple[Entity, ...]:
        """Every kind of record it stages or loads, in report order (siblings' load order)."""
        ...

    @property
    def tables(self) -> Registry:
        """Its export tables."""
        ...

    @property
    def pages(self) -> tuple[Page, ...]:
        """The pages its exports draw beside the tables (the tracker's flow.html)."""
        ...

    def plans(self, config: Config) -> Mapping[str, PlanFn]:
        """Ledger entity -> its plan, for this config (back-fill rules add their own)."""
        ...

    def configured(self, endpoint: Endpoint) -> bool: ...

    def client(self, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> Client: ...

    async def source(self, config: Config, client: Any, store: StagingStore) -> SourceParts: ...

    async def target(
        self, config: Config, client: Any, store: StagingStore, *, read_only: bool = False
    ) -> TargetParts:
        """Its load into the target org, built once per command; `read_only` (`haul verify`):
        what it needs of the target org is read as the store holds it, and nothing is written
        to the store (the load and the plan stage it anew)."""
        ...

    async def checks(
        self, config: Config, client: Any, store: StagingStore | None, side: str
    ) -> list[Finding]:
        """What `haul check` finds for this service on one side ("source" or "target"), beyond
        the token probe every service gets; `store` is None before the first extract."""
        ...

    async def checks_across(
        self, config: Config, source: Any, target: Any, store: StagingStore | None
    ) -> list[Finding]:
        """What `haul check` finds by comparing the source org with the target one, once both
        tokens were accepted (read-only on both sides)."""
        ...


def loadable(service: Service) -> tuple[str, ...]:
    """The ledger entities always shown, in report order."""
    return tuple(e.name for e in service.entities if e.loads and not e.optional)


def optional(service: Service) -> tuple[str, ...]:
    """Ledger entities shown only when something was planned for them (back-fills)."""
    return tuple(e.name for e in service.entities if e.loads and e.optional)


def staged_only(service: Service) -> tuple[str, ...]:
    """Entities staged for exports, never loaded."""
    return tuple(e.name for e in service.entities if not e.loads)


def entity_named(services: Iterable[Service], name: str) -> Entity:
    """The declaration of the entity `name` (an undeclared one: a staged entity of its name)."""
    for service in services:
        for entity in service.entities:
            if entity.name == name:
                return entity
    return Entity(name)


def core_options(endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning) -> Details:
    """What every service's client is built with from one side of the config: the token (read
    now, from the variable the config names), the org, the budgets, the patience, and room
    for the requests of `concurrency` records in flight at once."""
    token = endpoint.token(environ)
    hide_in_logs(token)  # whatever carries it by mistake, no log line will
    return {
        "token": token,
        "org_id": endpoint.org_id,
        "cloud_org_id": endpoint.cloud_org_id,
        "auth_scheme": endpoint.auth_scheme,
        "read_rate": endpoint.read_rps,
        "write_rate": endpoint.write_rps,
        "max_rate": endpoint.max_rps,
        "budget_share": endpoint.budget_share,
        "shared_budget": tuning.shared_budget,
        "shared_budget_wait": tuning.shared_budget_wait,
        "rate_limit_patience": tuning.rate_limit_patience,
        "outage_patience": tuning.outage_patience,
        "request_timeout": tuning.request_timeout,
        "max_connections": connections_for(tuning.concurrency),
    }


CONNECTIONS_PER_RECORD = 4  # an issue's listings, a page's three reads, a tree's siblings


def connections_for(concurrency: int) -> int:
    """Connections a client may hold: a record in flight sends several requests at once (the
    core's old fixed 32 held a wiki load of 32 pages to about one request each); the rate
    budgets, not the pool, pace what the service sees."""
    return max(32, CONNECTIONS_PER_RECORD * concurrency)


def sync_changes(
    made: Mapping[tuple[str, str], int],
    deleted_at_source: Mapping[str, int],
    out_of_scope: Mapping[str, int] | None = None,
) -> dict[str, dict[str, int]]:
    """A `TargetParts.changes` summary: per entity, what the load did (created, updated,
    moved, replaced, deleted), what the source deleted (``deleted_at_source``, whether or not
    it was mirrored) and what left the scope while still at the source (``out_of_scope``,
    never deleted in the target)."""
    summary: dict[str, dict[str, int]] = {}
    for (entity, what), count in sorted(made.items()):
        summary.setdefault(entity, {})[what] = count
    for entity, count in sorted(deleted_at_source.items()):
        summary.setdefault(entity, {})["deleted_at_source"] = count
    for entity, count in sorted((out_of_scope or {}).items()):
        summary.setdefault(entity, {})["out_of_scope"] = count
    return summary


def plans_of(services: Iterable[Service], config: Config) -> dict[str, PlanFn]:
    """Every ledger entity's plan, whichever services this run opened: a back-fill staged by
    the forms extract is planned for the tracker even when the tracker was not read."""
    return {name: plan for service in services for name, plan in service.plans(config).items()}
