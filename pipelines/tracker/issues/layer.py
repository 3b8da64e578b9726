"""The issue record: each scoped queue's scroll, and the issue's own kinds in the trees.

Its kinds (`issues.kinds`), in the order an issue's rows load: the issue itself (`record`:
imported, found by key, moved and refreshed three ways), a status changed at the source
(`statuses`) and the issue's access list (`access`). What hangs under an issue is the
children layer's, the links between issues the links layer's, and what changed across kinds
since the last run (deletions, undo, the sync's preview) the changes layer's.

It also brings what covers the whole trees: `haul plan`'s planner (`plan`, with the target's
limits: `limits`), verify (`verify`, with `fingerprints`) and the export's tables (`export`).
Moved issues are followed before anything is planned (`record.follow_moves`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.findings import Finding
from haul.pipelines.services import Details, SourceParts
from haul.pipelines.specs import EntitySpec
from haul.pipelines.streams import ExtractStats
from haul.pipelines.tracker.issues.access import ACCESS
from haul.pipelines.tracker.issues.export import TABLES
from haul.pipelines.tracker.issues.kinds import Kind, TreeLoad, kind_plans, kind_specs
from haul.pipelines.tracker.issues.limits import LimitPlanner, TargetLimits, limit_findings
from haul.pipelines.tracker.issues.plan import TrackerPlanner
from haul.pipelines.tracker.issues.record import ISSUE, follow_moves
from haul.pipelines.tracker.issues.scroll import IssueScroll
from haul.pipelines.tracker.issues.statuses import ISSUE_STATUS
from haul.pipelines.tracker.layer import Layer, TargetPart, on_the_staged_target
from haul.pipelines.tracker.target import (
    TrackerTarget,
    mentions,
    source_scan,
)
from haul.state.store import StagingStore

# the issue's own kinds, in the order its rows load
KINDS: tuple[Kind, ...] = (ISSUE, ISSUE_STATUS, ACCESS)


def issue_plans(config: Config) -> Mapping[str, PlanFn]:
    """Moves are followed before anything of the issues is planned (a plan that plans
    nothing: it renames the rows of an issue loaded under an old key), then the issue's
    kinds."""
    return {"issue_move": follow_moves, **kind_plans(KINDS)}


def issue_source(client: TrackerClient, store: StagingStore, config: Config) -> SourceParts:
    """Each scoped queue's scroll, and the figures the extract reports of it: what was staged
    and how often a scroll restarted (the drain of each issue is the children layer's)."""
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

    async def details(stats: ExtractStats) -> Details:
        return {
            "issues_staged": stats.staged["issue"],
            "scroll_restarts": sum(scroll.restarts for scroll in scrolls),
        }

    return SourceParts(list(scrolls), [], details)


async def issue_target(target: TrackerTarget) -> TargetPart:
    """The issue's kinds into one target org, and what covers the whole trees: `haul plan`'s
    planner (records over a target limit are conflicts), verify and its scan for references to
    the source, and what the trees' load could not carry."""
    store, transform = target.store, target.transform
    load = TreeLoad.of(target)
    verifier = load.verifier

    def not_carried() -> dict[str, int]:
        fixed = {
            f"{name}: changed at the source, no update call changes it": n
            for name, n in sorted(load.not_updatable.items())
        }
        left = {f"reference: {what}": n for what, n in sorted(transform.references.left.items())}
        return fixed | left | dict(load.kept)

    def planner(specs: list[EntitySpec]) -> LimitPlanner:
        return LimitPlanner(load.limits, _planner(target, specs, load.kinds))

    return TargetPart(
        kind_specs(KINDS, load),
        not_carried=not_carried,
        unmapped_users=lambda: transform.users.unmapped,
        planner=planner,
        verifier=verifier,
        references=source_scan(store, target.config, mentions(transform, target.config)),
    )


def _planner(target: TrackerTarget, specs: list[EntitySpec], tree: set[str]) -> TrackerPlanner:
    transform = target.transform
    return TrackerPlanner(
        target.client,
        target.store,
        {spec.name: spec for spec in specs},
        transform.unique_prefix,
        transform.queues.key,
        unmapped_access=lambda raw: transform.access(raw).unmapped,
        tree=tree,
    )


@on_the_staged_target
async def limit_checks(
    config: Config, client: TrackerClient, store: StagingStore, target: TrackerTarget
) -> list[Finding]:
    """`haul check` on the target: the staged records over one of its hard limits, named as
    the load fails them."""
    return limit_findings(TargetLimits(store, config.limits, target.transform.comment_text))


ISSUES = Layer(
    "issues",
    entities=tuple(kind.entity for kind in KINDS),
    tables=TABLES,
    plans=issue_plans,
    source=issue_source,
    checks=limit_checks,
    target=issue_target,
)
