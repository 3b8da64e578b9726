"""The organisation as configured, loaded first: dictionary values, field categories, global
and local fields, queues with their workflows, issue-type configuration and permissions
(`configuration`), components, versions, boards with their columns, every sprint; each
matched in the target by identity and created only when missing (`objects`: one module per
kind, `dictionaries`, `fields`, `queue_objects`, `boards`).

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
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.organisation import boards as boards_
from haul.pipelines.tracker.organisation import dictionaries, fields, queue_objects
from haul.pipelines.tracker.organisation.boards import board_findings, board_plans
from haul.pipelines.tracker.organisation.boards import left_out as boards_left_out
from haul.pipelines.tracker.organisation.configuration import queue_configuration
from haul.pipelines.tracker.organisation.configured import plan_configs, plan_workflows
from haul.pipelines.tracker.organisation.export import TABLES
from haul.pipelines.tracker.organisation.objects import OrgObjects
from haul.pipelines.tracker.organisation.queue_permissions import queue_permission_findings
from haul.pipelines.tracker.organisation.shard_units import tracker_units
from haul.pipelines.tracker.organisation.streams import (
    checked_target,
    dictionary_streams,
    stage_target,
    structure_streams,
)
from haul.pipelines.tracker.target import TrackerTarget
from haul.state.store import StagingStore

# the target's staging (for a load, for `haul check`); the units of a shard manifest
__all__ = ["ORGANISATION", "checked_target", "stage_target", "tracker_units"]


def organisation_plans(config: Config) -> Mapping[str, PlanFn]:
    """The dictionaries' and the structure's plans, parents before children (a queue before
    its configuration, the workflows that configuration names before it)."""
    plans = {
        **dictionaries.PLANS,
        **fields.PLANS,
        **queue_objects.PLANS,
        **board_plans(config.scope.queues),
    }
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


async def organisation_target(target: TrackerTarget) -> TargetPart:
    """The organisation as configured, matched in the target or made there, and what of it
    the target could not take (a field left out of a structure, a queue's setting)."""
    transform = target.transform
    configuration = await queue_configuration(target)
    objects = OrgObjects(target.client, target.store, transform,
                         target.config.mapping.create_missing,
                         restrict=configuration.restrict_new_queue,
                         queues=target.config.scope.queues)  # fmt: skip
    kinds = (dictionaries, fields, queue_objects, boards_)  # in the order siblings load

    def not_carried() -> dict[str, int]:
        dropped = transform.structure.dropped if transform.structure else {}
        carried = {f"{field}: {why}": n for (field, why), n in sorted(dropped.items())}
        return carried | configuration.not_carried() | objects.kept

    return TargetPart(
        [spec for kind in kinds for spec in kind.specs(objects)] + configuration.specs(),
        not_carried=not_carried,
        left_out=lambda: boards_left_out(target.store, target.config.scope.queues),
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
    target=organisation_target,
)
