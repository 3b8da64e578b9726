"""What one layer folder of the tracker hands the service: one small `Layer` object.

The tracker is cut along DESIGN's load layers, one folder each (`organisation/`, `issues/`,
`children/`, `links/`, `entities/`, `planning/`, `backfill/`, `changes/`, `flow/`,
`checks/`); each folder's `layer.py`
builds its `Layer`, and `pipelines.tracker.service` lists them in load order and loops::

    layer.name                              the folder's name
    layer.entities                          its `Entity` declarations, in report order
    layer.tables                            its export tables and table families
    layer.pages                             the pages its exports draw (flow.html)
    layer.plans(config)                     -> {ledger entity: plan}, in the order siblings plan
    layer.source(client, store, config)     -> SourceParts: its extract streams and drains, and
                                               the figures it reports after the extract
    layer.checks(config, client, store, side, target)
                                            -> what `haul check` finds on one side (`target`:
                                               the target context, built once, or None)
    layer.checks_across(config, source, target, store)
                                            -> what it finds comparing the two orgs
    layer.target(target)                    -> TargetPart: what it loads into one target org
                                               with (`target`: the context, built once)

Every part but the name is optional: the flow model has tables (and a check of `[model]`), the checks only checks.
The service concatenates what the layers hand in their order: entities (the report's order),
tables, plans (the engine plans in that order: moves are followed before the issues are
planned, deletions found after everything else), streams and drains, findings, and the target
parts (`joined`): specs, what was not carried, changes, unmapped users and removals added up;
the planner built by one layer and wrapped by the later ones; verify, its source scan, the
preview, the target's own counts and what the load holds while it runs, each from the one layer
that brings it.

A layer folder imports the shared room at the top of `pipelines/tracker/` (this contract,
`timefmt`, `transform`, `target`, `issue_access`, `export_columns`), its own modules, and of
another layer only the few modules the import-graph test names as shared; the layers form no
circle (`tests/packaging/test_import_graph.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.pages import Page
from haul.pipelines.export.tables import Family, Table
from haul.pipelines.findings import Finding
from haul.pipelines.planner import Planner
from haul.pipelines.services import Entity, LeftOut, SourceParts, TargetParts
from haul.pipelines.specs import EntitySpec
from haul.pipelines.sync.preview import ChangePreview
from haul.pipelines.sync.references import SourceScan
from haul.pipelines.sync.removals import Removal
from haul.pipelines.tracker.target import issues_staged
from haul.pipelines.verifying import Verifier
from haul.state.store import StagingStore

if TYPE_CHECKING:  # the target context is built by the service, never by a layer's contract
    from haul.pipelines.tracker.target import TrackerTarget

PlansOf = Callable[[Config], Mapping[str, PlanFn]]
SourceOf = Callable[[TrackerClient, StagingStore, Config], SourceParts]
ChecksOf = Callable[
    [Config, TrackerClient, StagingStore | None, str, "TrackerTarget | None"],
    Awaitable[list[Finding]],
]
ChecksAcross = Callable[
    [Config, TrackerClient, TrackerClient, StagingStore | None], Awaitable[list[Finding]]
]

StagedChecks = Callable[
    [Config, TrackerClient, StagingStore, "TrackerTarget"], Awaitable[list[Finding]]
]


def on_the_staged_target(check: StagedChecks) -> ChecksOf:
    """A layer's `checks`, run by `haul check` on the target side once issues are staged
    (there is a store and a target context); nothing on the source side or before."""

    async def checks(
        config: Config,
        client: TrackerClient,
        store: StagingStore | None,
        side: str,
        target: TrackerTarget | None,
    ) -> list[Finding]:
        if side != "target" or store is None or target is None or not issues_staged(config, store):
            return []
        return await check(config, client, store, target)

    return checks


Counts = Callable[[], Mapping[str, int]]


@dataclass
class TargetPart:
    """What one layer loads into one target org with (see the module docstring)."""

    specs: list[EntitySpec] = field(default_factory=list)
    not_carried: Counts | None = None  # "field: why" -> records it was left out of
    changes: Callable[[], Mapping[str, dict[str, int]]] | None = None  # entity -> what -> n
    unmapped_users: Callable[[], Iterable[str]] | None = None
    removals: Mapping[str, Removal] = field(default_factory=dict)
    left_out: Callable[[], Iterable[LeftOut]] | None = None  # records the scope cannot carry
    wraps_planner: Callable[[Planner], Planner] | None = None  # decides some rows itself
    # each of these comes from the one layer that brings it (the planner: from every spec)
    planner: Callable[[list[EntitySpec]], Planner] | None = None
    verifier: Verifier | None = None
    references: SourceScan | None = None
    preview: ChangePreview | None = None
    in_target: Callable[[], Awaitable[dict[str, int]]] | None = None
    holding: Callable[[], AbstractAsyncContextManager[None]] | None = None


TargetOf = Callable[["TrackerTarget"], Awaitable[TargetPart]]


def joined(parts: Sequence[TargetPart]) -> TargetParts:
    """The service's target parts: the layers' parts, in the layers' order."""
    specs = [spec for part in parts for spec in part.specs]
    base = next((part.planner for part in parts if part.planner), None)
    planner = base(specs) if base else None
    for part in parts:
        if part.wraps_planner is not None and planner is not None:
            planner = part.wraps_planner(planner)
    return TargetParts(
        specs,
        in_target=next((part.in_target for part in parts if part.in_target), None),
        unmapped_users=lambda: sorted(
            {u for p in parts if p.unmapped_users for u in p.unmapped_users()}
        ),
        planner=planner,
        verifier=next((part.verifier for part in parts if part.verifier), None),
        not_carried=lambda: {
            k: n for p in parts if p.not_carried for k, n in p.not_carried().items()
        },
        changes=lambda: {k: v for p in parts if p.changes for k, v in p.changes().items()},
        removals={entity: how for part in parts for entity, how in part.removals.items()},
        left_out=lambda: [item for p in parts if p.left_out for item in p.left_out()],
        preview=next((part.preview for part in parts if part.preview), None),
        references=next((part.references for part in parts if part.references), None),
        holding=next((part.holding for part in parts if part.holding), None),
    )


def no_plans(config: Config) -> Mapping[str, PlanFn]:
    """A layer that plans nothing (its records load with another's, or not at all)."""
    return {}


@dataclass(frozen=True)
class Layer:
    """One layer of the tracker as the service plugs it in (see the module docstring)."""

    name: str
    entities: tuple[Entity, ...] = ()
    tables: tuple[Table | Family, ...] = ()
    pages: tuple[Page, ...] = ()  # drawn by the export beside the tables
    plans: PlansOf = no_plans
    source: SourceOf | None = None
    checks: ChecksOf | None = None
    checks_across: ChecksAcross | None = None
    target: TargetOf | None = None
