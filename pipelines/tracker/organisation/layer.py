"""The organisation as configured, loaded first: dictionary values, field categories, global
and local fields, queues with their workflows, issue-type configuration and permissions
(`configuration`), components, versions, boards with their columns, every sprint; each
matched in the target by identity and created only when missing (`specs`).

Its extract lists the source's dictionaries and structure (`streams`); its export tables are
the structure's (`export`); across the two orgs, `haul check` compares the migrated queues'
permissions (`queue_permissions`).
"""

from __future__ import annotations

from collections.abc import Mapping

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.services import Entity, SourceParts
from haul.pipelines.tracker.layer import Layer
from haul.pipelines.tracker.organisation.board_scope import board_findings
from haul.pipelines.tracker.organisation.configured import plan_configs, plan_workflows
from haul.pipelines.tracker.organisation.export import TABLES
from haul.pipelines.tracker.organisation.queue_permissions import queue_permission_findings
from haul.pipelines.tracker.organisation.specs import ORG_PLANS, board_plans
from haul.pipelines.tracker.organisation.streams import dictionary_streams, structure_streams
from haul.state.store import StagingStore


def organisation_plans(config: Config) -> Mapping[str, PlanFn]:
    """The dictionaries' and the structure's plans, parents before children (a queue before
    its configuration, the workflows that configuration names before it)."""
    plans = {**ORG_PLANS, **board_plans(config.scope.queues)}
    queue_at = list(plans).index("queue")
    ordered = list(plans.items())
    ordered.insert(queue_at + 1, ("queue_config", plan_configs))
    ordered.insert(queue_at, ("workflow", plan_workflows))
    return dict(ordered)


def organisation_source(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """The source's dictionaries, queues and users, and the structure of the scoped queues."""
    return SourceParts(
        [*dictionary_streams(client), *structure_streams(client, config.scope.queues)]
    )


ORGANISATION = Layer(
    "organisation",
    entities=(
        Entity("status"),
        Entity("issuetype"),
        Entity("priority"),
        Entity("resolution"),
        Entity("workflow"),
        Entity("queue"),
        Entity("queue_config"),
        Entity("field_category"),
        Entity("field"),
        Entity("local_field"),
        Entity("component"),
        Entity("version"),
        Entity("board"),
        Entity("board_column"),
        Entity("sprint"),
    ),
    tables=TABLES,
    plans=organisation_plans,
    source=organisation_source,
    checks=board_findings,
    checks_across=queue_permission_findings,
)
