"""What the load would do with each tracker ledger row, asked of the target with reads only.

An issue is `skip` when the target holds it and it is ours (its `unique` is the one haul gives
it, api-notes 1.7), `conflict` when its key is taken by another issue, `create` otherwise. The
other issue's `unique` names who made it: another issue of this migration (two source queues
mapped onto one, or an earlier mapping), another haul migration (another source org), a
back-fill, or none of them (someone in the target); two staged issues whose queues map onto one
queue conflict over each number they share: the first (in key order) is created, the other
is a conflict naming it. A sub-record is `create` when its issue
will be created; otherwise the spec's `find` (the probe the load uses to reconcile) says
whether the target already holds it. What is under a conflicting issue is `blocked`
(`pipelines.commands.plan` says so before asking). An issue's access row whose list leaves a holder
out (no target account) is a `conflict` naming them: the load narrows the list and fails it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.planner import Decision, SpecPlanner
from haul.pipelines.specs import EntitySpec, target_of
from haul.pipelines.tracker.issue_access import ENTITY as ISSUE_ACCESS
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore


@dataclass
class TrackerPlanner:
    """Decides, row by row, with the load's own specs and probes."""

    client: TrackerClient
    store: StagingStore
    specs: dict[str, EntitySpec]
    unique_prefix: str
    queue_key: Any
    # a staged issue -> the holders its access list leaves out (no target account)
    unmapped_access: Callable[[dict[str, Any]], tuple[str, ...]] = lambda raw: ()
    tree: Collection[str] = ()  # the entities of the trees' kinds (`TreeLoad.kinds`)
    _issues: dict[str, Decision] = field(default_factory=dict)
    _going_to: dict[str, str] = field(default_factory=dict)  # target key -> the issue made there

    async def decide(self, row: LedgerRow, record: StagedRecord) -> Decision:
        """create, skip or conflict for one pending ledger row, and why."""
        if row.entity not in self.tree:  # a back-fill: decided like any other spec's
            return await SpecPlanner(self.store, self.specs).decide(row, record)
        if row.entity == "issue":
            return await self._issue(record.source_id)
        if row.entity == ISSUE_ACCESS and (unmapped := self.unmapped_access(record.raw)):
            return "conflict", (
                f"{', '.join(unmapped)} has no target account: left out of the issue's access"
                " list, never given to the default user"
            )
        issue_key = record.parent or ""
        issue = await self._issue(issue_key)
        if issue[0] != "skip":
            return "create", f"its issue {issue_key} is not in the target yet"
        parent = self.store.ledger.target_id(row.parent_entity or "", row.parent or "")
        if row.parent_entity == "issue":
            parent = self.queue_key(issue_key)
        if parent is None:
            return "create", f"its {row.parent_entity} {row.parent} is not loaded yet"
        found = target_of(await self.specs[row.entity].find(record, parent, self._unclaimed(row)))
        return ("skip", f"the target holds it as {found}") if found else ("create", "")

    def _unclaimed(self, row: LedgerRow) -> Any:
        group = self.specs[row.entity].claim_group
        return lambda target_id: not self.store.ledger.is_claimed(group, target_id)

    async def _issue(self, source_key: str) -> Decision:
        if source_key in self._issues:
            return self._issues[source_key]
        done = self.store.ledger.get("issue", source_key)
        target_key = self.queue_key(source_key)
        if done is not None and done.status == "done":
            decision = ("skip", f"loaded as {done.target_id}")
        else:
            found = await self.client.find_issue(target_key)
            ours = f"{self.unique_prefix}:{source_key}"
            if found is None:
                decision = self._create(source_key, target_key)
            elif found.get("unique") == ours:
                decision = ("skip", f"the target holds it as {target_key} (made by haul)")
            else:
                decision = ("conflict", self.taken(target_key, found))
        self._issues[source_key] = decision
        return decision

    def _create(self, source_key: str, target_key: str) -> Decision:
        """create, unless another staged issue of this plan goes to the same key."""
        first = self._going_to.setdefault(target_key, source_key)
        if first == source_key:
            return "create", ""
        queues = " and ".join(sorted({key.rpartition("-")[0] for key in (first, source_key)}))
        return "conflict", (
            f"{target_key} is where {first} goes too: queues {queues} are both mapped to "
            f"{target_key.rpartition('-')[0]}"
        )

    def taken(self, target_key: str, found: dict[str, Any]) -> str:
        """Why `target_key` cannot be ours, after the `unique` of the issue holding it."""
        unique = str(found.get("unique") or "")
        org_prefix, _, source_key = unique.rpartition(":")
        if org_prefix == self.unique_prefix:
            queue = source_key.rpartition("-")[0]
            return (
                f"{target_key} is taken by {source_key}, loaded there by this migration "
                f"(queue {queue} is mapped to {target_key.rpartition('-')[0]} too, now or "
                "in an earlier run)"
            )
        if unique.startswith("haul:forms:"):
            return f"{target_key} is taken by an issue back-filled from survey answer {source_key}"
        if unique.startswith("haul:"):
            org = org_prefix.removeprefix("haul:")
            return f"{target_key} is taken by {source_key} of org {org}, loaded by another haul migration"
        return f"{target_key} is taken by an issue haul did not make: {found.get('summary', '')!r}"
