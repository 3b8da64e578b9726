"""The planning layer beside the issues: saved filters, dashboards, remote links, autoactions.

One place gathers their extract streams, plans, load specs and export tables (`export`) into
the layer the tracker's service loops over (`PLANNING`):
saved filters and dashboards when `[scope] filters` / `dashboards` say "all" (`saved`),
remote links always with their issues (`remote_links`: the issue drain stages them),
autoactions, triggers and macros always with their queues, last (`autoactions`,
`queue_rules`). Their queries are rewritten by one
`QueryRewriter` for the target (`queries`); what the load could not carry is counted in
`not_carried`. (Projects, portfolios and goals are the `entities` layer.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.findings import Finding
from haul.pipelines.services import Entity, SourceParts
from haul.pipelines.specs import EntitySpec
from haul.pipelines.tracker.layer import Layer, TargetPart, on_the_staged_target
from haul.pipelines.tracker.planning.autoactions import (
    PLAN_AUTOACTIONS,
    AutoactionLoad,
    autoaction_stream,
)
from haul.pipelines.tracker.planning.export import TABLES
from haul.pipelines.tracker.planning.queries import QueryRewriter
from haul.pipelines.tracker.planning.queue_rules import (
    PLAN_MACROS,
    PLAN_TRIGGERS,
    QueueRuleLoad,
    rule_streams,
)
from haul.pipelines.tracker.planning.quiet_rules import QuietRules, held_in_target
from haul.pipelines.tracker.planning.remote_links import (
    PLAN_REMOTE_LINKS,
    RemoteLinkLoad,
    application_findings,
)
from haul.pipelines.tracker.planning.saved import SavedLoad, saved_plans, saved_streams
from haul.pipelines.tracker.target import TargetKeys, TrackerTarget
from haul.pipelines.tracker.transform import Transform
from haul.state.store import StagingStore

__all__ = ["PLANNING", "held_in_target"]  # the rules a killed load left switched off


def planning_plans(config: Config) -> dict[str, PlanFn]:
    """Ledger entity -> plan for this config, in the order siblings load."""
    return {
        "remote_link": PLAN_REMOTE_LINKS,
        **saved_plans(config.scope),
        "autoaction": PLAN_AUTOACTIONS,
        "trigger": PLAN_TRIGGERS,
        "macro": PLAN_MACROS,
    }


def planning_streams(client: TrackerClient, config: Config, store: StagingStore) -> list[Any]:
    """The extract's streams: saved filters and dashboards as scoped, the queues' autoactions
    (remote links come with each issue's drain)."""
    queues = config.scope.queues
    return [
        *saved_streams(client, config.scope),
        autoaction_stream(client, queues),
        *rule_streams(client, queues, store),
    ]


def target_rewriter(
    store: StagingStore, transform: Transform, keys: TargetKeys, config: Config
) -> QueryRewriter:
    """Queries rewritten for this target: a queue in scope or in the target under its mapped
    key, a staged issue under its target key, a person through the users file or under the
    same login; anything else has no counterpart."""
    staged = store.source_ids("issue")
    in_target = store.source_ids("target.queue")
    in_scope = set(config.scope.queues)
    users = transform.users

    def queue(name: str) -> str | None:
        mapped = transform.queues.queue(name)
        return mapped if name in in_scope or mapped in in_target else None

    def issue(key: str) -> str | None:
        return keys.key(key) if keys.current(key) in staged else None

    def user(login: str) -> str | None:
        return users.explicit.get(login) or (login if login in users.target_logins else None)

    return QueryRewriter(queue, issue, user)


@dataclass(frozen=True)
class PlanningLoad:
    """The planning layer's specs for one target, and what they could not carry."""

    specs: list[EntitySpec]
    not_carried: Callable[[], dict[str, int]]


def planning_load(target: TrackerTarget) -> PlanningLoad:
    """Build the specs of remote links, saved filters, dashboards and autoactions."""
    client, transform, keys = target.client, target.transform, target.keys
    rewriter = target_rewriter(target.store, transform, keys, target.config)
    remote = RemoteLinkLoad(client, keys.key)
    saved = SavedLoad(client, transform, rewriter, target.uids, target.myself)
    autoactions = AutoactionLoad(client, transform.queues, rewriter)
    rules = QueueRuleLoad(client, transform.queues, rewriter)

    def not_carried() -> dict[str, int]:
        return dict(remote.kept + saved.kept + autoactions.kept + rules.kept)

    specs = [remote.spec(), *saved.specs(), autoactions.spec(), *rules.specs()]
    return PlanningLoad(specs, not_carried)


async def planning_target(target: TrackerTarget) -> TargetPart:
    """The planning layer into one target org; the target's triggers and autoactions held
    off while the load runs, so importing fires none."""
    planning = planning_load(target)
    quiet = QuietRules(target.client, target.store, target.transform.queues)
    return TargetPart(planning.specs, not_carried=planning.not_carried, holding=quiet.holding)


def planning_source(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """The planning layer's extract streams (`planning_streams`)."""
    return SourceParts(planning_streams(client, config, store))


@on_the_staged_target
async def application_checks(
    config: Config, client: TrackerClient, store: StagingStore, target: TrackerTarget
) -> list[Finding]:
    """`haul check` on the target: every application the staged remote links point into."""
    return await application_findings(client, store)


PLANNING = Layer(
    "planning",
    entities=(
        Entity("remote_link"),  # staged by the issue drain, loaded beside the issues
        Entity("filter", optional=True),  # [scope] filters = "all"
        Entity("dashboard", optional=True),  # [scope] dashboards = "all"
        Entity("dashboard_widget", optional=True),
        Entity("autoaction"),
        Entity("trigger"),
        Entity("macro"),
    ),
    tables=TABLES,
    plans=planning_plans,
    source=planning_source,
    checks=application_checks,
    target=planning_target,
)
