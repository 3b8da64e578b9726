"""What every kind of record in an issue's tree loads with, and how a kind plugs in.

A kind is one module exporting one `Kind`: its ledger entity, its declaration (`Entity`), its
plan and the spec it loads with, built from the `TreeLoad` every kind of the trees shares::

    issues/record.py     the issue itself (imported, found, moved, refreshed three ways)
    issues/statuses.py   a status changed at the source, walked through the target's workflow
    issues/access.py     the issue's access list
    children/*.py        what hangs under an issue: comments, worklogs, files, texts, checklists
    links/links.py       the links between issues, once both ends exist

A layer's `layer.py` lists its kinds in the order siblings load (an issue's children load in
that order, one group after another); its entities, plans and specs follow from the list, so
a new kind is one module and one line in its folder's `layer.py`.

A kind previews its own rows for `haul plan` (`Kind.preview`, a `KindPreview`): what a pending
row stands for when it is not a create, and what the next load does with a record changed at
the source. Without one, a changed record is an update of fields the preview does not name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config
from haul.pipelines.engine import PlanFn
from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Fields, RecordFailure, Ref
from haul.pipelines.sync.preview import Change, updated
from haul.pipelines.sync.three_way import ConflictRule, ThreeWay
from haul.pipelines.tracker.issues.fingerprints import TargetProbe, TrackerFingerprints
from haul.pipelines.tracker.issues.limits import TargetLimits
from haul.pipelines.tracker.issues.verify import TrackerVerifier
from haul.pipelines.tracker.layer import Layer, TargetPart
from haul.pipelines.tracker.target import TargetKeys, TrackerTarget
from haul.pipelines.tracker.transform import Transform
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore


@dataclass
class TreeLoad:
    """Everything the kinds of the trees need to write to one target org, and what they tell
    the run (what changed, what was kept back)."""

    client: TrackerClient
    store: StagingStore
    transform: Transform
    probe: TargetProbe
    prints: TrackerFingerprints
    keys: TargetKeys
    limits: TargetLimits  # the target's hard limits: a record over one fails before its send
    conflicts: ConflictRule = "keep-target"  # [sync] conflicts: a field changed on both sides
    # (entity, what happened) -> how many: created, updated, moved, deleted (the run details)
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)
    # "what: why" -> how many, for `not_carried`
    kept: Counter[str] = field(default_factory=Counter)
    # field -> issues whose change at the source of it no update call can carry
    not_updatable: Counter[str] = field(default_factory=Counter)
    configured: dict[str, LedgerRow | None] = field(default_factory=dict)  # queue_config rows
    kinds: set[str] = field(default_factory=set)  # the entities of the specs built through it
    previews: dict[str, KindPreview] = field(default_factory=dict)  # entity -> its kind's

    @classmethod
    def of(cls, target: TrackerTarget) -> TreeLoad:
        """The one `TreeLoad` of a target context, built by the first layer that asks (every
        layer of the trees writes through it, and the run reads its counts once)."""
        load = target.parts.get(cls)
        if isinstance(load, cls):
            return load
        client, transform, keys = target.client, target.transform, target.keys
        load = cls(
            client,
            target.store,
            transform,
            TargetProbe(client),
            TrackerFingerprints(client, transform, target.uids, keys.key),
            keys,
            TargetLimits(target.store, target.config.limits, transform.comment_text),
            conflicts=target.config.sync.conflicts,
        )
        target.parts[cls] = load
        return load

    @cached_property
    def verifier(self) -> TrackerVerifier:
        """Verify's reading of the trees' records (the issues layer's verifier, the changes
        layer's preview), with what haul last wrote of each."""
        return TrackerVerifier(self.client, self.transform, self.prints, self.store.written.base)

    def refuse_over_limit(self, record: StagedRecord) -> None:
        """Fail a record the target would refuse for a hard limit, before its send."""
        self.limits.check(record)

    def made(self, entity: str, target_id: str) -> str:
        """Count a record created in the target; its target id."""
        self.changes[(entity, "created")] += 1
        return target_id

    @staticmethod
    def parent_key(record: StagedRecord, issue_key: str | None) -> str:
        """The target key of the issue a child record belongs to: its parent's target id, as
        the engine hands it (the ledger's, a moved issue's new key)."""
        if issue_key is None:
            raise RecordFailure(f"the issue of {record.entity} {record.source_id} is not loaded")
        return issue_key

    def issue_key(self, record: StagedRecord) -> str:
        """The target key of the issue of a record the engine hands no issue for: one
        refreshed (handed its own target id) or a comment's attachment (handed its comment)."""
        return self.keys.key(record.parent or "")

    @property
    def three_way(self) -> ThreeWay:
        """The rule that settles a record a sync edits (`pipelines.sync.three_way`)."""
        written_as = self.transform.references.written_as  # a text patched with its files
        return ThreeWay(
            self.store.written, self.conflicts, self.changes, written_as, self.store.conflicts
        )

    @staticmethod
    async def target_record(listing: AsyncIterator[dict[str, Any]], target_id: str) -> Fields:
        """The target's record `target_id` from its issue's listing; gone there: a failure."""
        items = [item async for item in listing]  # read whole: the listing closes itself
        found = next((item for item in items if str(item.get("id")) == target_id), None)
        if found is None:
            raise RecordFailure(f"record {target_id} is no longer in the target")
        return found


def issue_of(record: StagedRecord) -> Ref:
    """The issue a child record hangs under."""
    return Ref("issue", record.parent or "")


def created(record: StagedRecord) -> str:
    """When a child record was made at the source (the order its siblings load in)."""
    return str(record.raw.get("createdAt") or "")


@dataclass
class KindPreview:
    """A kind's part of `haul plan`'s preview (`pipelines.sync.preview.ChangePreview`): by
    default none of its pending rows is anything but a create, and a record of it changed at
    the source is an update of the fields its refresh edits (`refreshed`)."""

    refreshed: tuple[str, ...] = ()

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None:
        """What a pending row stands for when it is not a create; asked of every kind, so a
        kind may speak for another's row (a file's replacement for the old file's deletion)."""
        return None

    async def changes(self, row: LedgerRow, record: StagedRecord) -> list[Change]:
        """What the next load does with a loaded record of this kind changed at the source."""
        return [updated(row, self.refreshed, "changed at the source")]


@dataclass(frozen=True)
class Kind:
    """One kind of record of the trees: declared, planned and loaded with a `TreeLoad`, and
    previewed by `haul plan` (none: the default `KindPreview`)."""

    entity: Entity
    plan: PlanFn
    spec: Callable[[TreeLoad], EntitySpec | None]  # None: not loaded with this config
    preview: Callable[[TreeLoad], KindPreview] | None = None

    @property
    def name(self) -> str:
        return self.entity.name


def kind_plans(kinds: tuple[Kind, ...]) -> dict[str, PlanFn]:
    """{ledger entity: plan}, in the kinds' order."""
    return {kind.name: kind.plan for kind in kinds}


def kind_specs(kinds: tuple[Kind, ...], load: TreeLoad) -> list[EntitySpec]:
    """The kinds' specs, in their order (the order an issue's children load); their previews
    kept on `load` for the changes layer's."""
    specs = [spec for kind in kinds if (spec := kind.spec(load)) is not None]
    load.kinds.update(spec.name for spec in specs)
    load.previews.update({kind.name: kind.preview(load) for kind in kinds if kind.preview})
    return specs


def kinds_layer(
    name: str, kinds: tuple[Kind, ...], *, staged_only: tuple[Entity, ...] = (), **parts: Any
) -> Layer:
    """The `Layer` of `kinds`: their entities (then `staged_only`, declared but not loaded),
    their plans and their specs, built on the target's one `TreeLoad`; `parts` are the
    layer's other parts (its extract, its checks)."""

    def plans(config: Config) -> Mapping[str, PlanFn]:
        return kind_plans(kinds)

    async def target(target: TrackerTarget) -> TargetPart:
        return TargetPart(kind_specs(kinds, TreeLoad.of(target)))

    entities = (*(kind.entity for kind in kinds), *staged_only)
    return Layer(name, entities=entities, plans=plans, target=target, **parts)
