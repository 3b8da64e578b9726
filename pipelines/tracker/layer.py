"""What one layer folder of the tracker hands the service: one small `Layer` object.

The tracker is cut along DESIGN's load layers, one folder each (`organisation/`, `issues/`,
`entities/`, `planning/`, `backfill/`, `sync/`, `flow/`, `checks/`); each folder's `layer.py`
builds its `Layer`, and `pipelines.tracker.service` lists them in load order and loops::

    layer.name                              the folder's name
    layer.entities                          its `Entity` declarations, in report order
    layer.tables                            its export tables and table families
    layer.plans(config)                     -> {ledger entity: plan}, in the order siblings plan
    layer.source(client, store, config)     -> SourceParts: its extract streams and drains, and
                                               the figures it reports after the extract
    layer.checks(config, client, store, side, target)
                                            -> what `haul check` finds on one side (`target`:
                                               the target context, built once, or None)
    layer.checks_across(config, source, target, store)
                                            -> what it finds comparing the two orgs

Every part but the name is optional: the flow model has tables (and a check of `[model]`), the checks only checks.
The service concatenates what the layers hand in their order: entities (the report's order),
tables, plans (the engine plans in that order: moves are followed before the issues are
planned, deletions found after everything else), streams and drains, findings.

The target's parts (the specs each layer loads with, their planner, verifier and what they
could not carry) are wired by `TrackerService.target`, which builds the target context once.

A layer folder imports the shared room at the top of `pipelines/tracker/` (this contract,
`timefmt`, `transform`, `target`, `issue_access`, `export_access`), its own modules, and of
another layer only the few modules the import-graph test names as shared; the layers form no
circle (`tests/packaging/test_import_graph.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.export.tables import Family, Table
from haul.pipelines.findings import Finding
from haul.pipelines.services import Entity, SourceParts
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


def no_plans(config: Config) -> Mapping[str, PlanFn]:
    """A layer that plans nothing (its records load with another's, or not at all)."""
    return {}


@dataclass(frozen=True)
class Layer:
    """One layer of the tracker as the service plugs it in (see the module docstring)."""

    name: str
    entities: tuple[Entity, ...] = ()
    tables: tuple[Table | Family, ...] = ()
    plans: PlansOf = no_plans
    source: SourceOf | None = None
    checks: ChecksOf | None = None
    checks_across: ChecksAcross | None = None
