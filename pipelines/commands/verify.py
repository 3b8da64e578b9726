"""Verify: read the target back and compare it with the staging store, record by record.

For every loaded (ledger `done`) record, two fingerprints of the mapped fields: the staged
record as the load maps it, and the target's record read back by its target id, from the spec's
`Fingerprint` (the same fields its `find` matches on) or, for a spec without one, from its
service's verifier; an entity neither covers is reported as not compared. Any field that differs is a `Difference`; a record the target no longer has is one
too. Counts per entity: staged, loaded, checked, found in the target, differing, and not
carried (staged records of a kind the scope cannot carry: never planned, so none is compared).
"""

from __future__ import annotations

import csv
import json
import os
import random
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import structlog

from haul.connectors.errors import NotFoundError
from haul.pipelines.commands.run import open_clients, open_store
from haul.pipelines.config import Config
from haul.pipelines.report.run import VERIFY_CHECKPOINT, write_reports
from haul.pipelines.services import Service
from haul.pipelines.specs import EntitySpec, Fields, Fingerprint, Listing
from haul.pipelines.sync.references import SourceScan
from haul.state.ledger import LedgerRow
from haul.state.private import open_private
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

MISSING = "(missing in target)"
# a text the target holds that still points at the source: the reference is the target side
SOURCE_REFERENCE = "(no reference to the source)"


@dataclass(frozen=True)
class Difference:
    """One field of one record that differs between the staged data and the target."""

    entity: str
    source_id: str
    target_id: str
    field: str
    source: str
    target: str
    # why a field differs when the service knows (a verifier's `known`): "changed in the
    # target" (a person's edit haul keeps), "changed on both sides" (a sync conflict), "not
    # updatable" (changed at the source where no update call can follow); "" when it does not
    known: str = ""

    @property
    def kind(self) -> str:
        """What differs: a missing `record`, an `extra record`, a grid `cell`, a `field`, a
        `source reference` left in a text, or a field the service explains (`known`)."""
        if self.source == SOURCE_REFERENCE:
            return "source reference"
        if self.known:
            return self.known
        if self.field in ("record", "extra record"):
            return self.field
        return "cell" if self.field.startswith("cell ") else "field"

    @property
    def lost(self) -> bool:
        """Whether this difference is something the target lacks: not a change made in the
        target, nor one the API cannot carry (named, known)."""
        return self.known not in NOT_LOST


# differences that are no loss: a person's edit or record in the target, a field no update
# call changes
NOT_LOST = ("changed in the target", "added in the target", "not updatable")


@runtime_checkable
class ExplainsDifferences(Protocol):
    """A verifier that knows why some fields differ (a three-way sync's base)."""

    def known(self, row: LedgerRow, name: str, expected: Any, found: Any) -> str: ...


@dataclass
class EntityVerdict:
    """One entity's counts: staged, loaded, checked, found in the target, differing."""

    entity: str
    staged: int = 0
    loaded: int = 0
    checked: int = 0
    found: int = 0
    differing: int = 0
    compared: bool = True  # False: no verifier compares this entity yet (said, not skipped)
    not_carried: int = 0  # staged, never planned: the scope cannot carry them (`LeftOut`)


@dataclass
class VerifyResult:
    """Every entity's verdict and every difference found."""

    entities: list[EntityVerdict] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    started_at: str = ""  # when verify began and ended (the report's stage timeline)
    ended_at: str = ""

    @property
    def ok(self) -> bool:
        """Nothing lost: every difference is a known one that is no loss (`Difference.lost`)."""
        return not any(item.lost for item in self.differences)

    def by_kind(self) -> dict[str, int]:
        """How many differences of each kind (record, extra record, cell, field)."""
        counts: dict[str, int] = {}
        for item in self.differences:
            counts[item.kind] = counts.get(item.kind, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entities": [asdict(v) for v in self.entities],
            "differences": [asdict(d) | {"kind": d.kind} for d in self.differences[:200]],
            "difference_count": len(self.differences),
            "differences_by_kind": self.by_kind(),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def differences(
    row: LedgerRow, expected: Mapping[str, Any], found: Mapping[str, Any] | None
) -> list[Difference]:
    """The fields of one record that differ; one `record` difference when it is missing."""
    target_id = row.target_id or ""
    if found is None:
        return [Difference(row.entity, row.source_id, target_id, "record", "present", MISSING)]
    return [
        Difference(row.entity, row.source_id, target_id, name, _show(value), _show(found.get(name)))
        for name, value in expected.items()
        if found.get(name) != value
    ]


def _explained(
    verifier: ExplainsDifferences,
    row: LedgerRow,
    expected: Mapping[str, Any],
    found: Mapping[str, Any],
    found_here: list[Difference],
) -> list[Difference]:
    """The differences, each with the verifier's reason where it knows one."""
    return [
        replace(
            item, known=verifier.known(row, item.field, expected[item.field], found.get(item.field))
        )
        if item.field in expected
        else item
        for item in found_here
    ]


def source_references(
    scan: SourceScan | None, row: LedgerRow, found: Mapping[str, Any] | None
) -> list[Difference]:
    """One difference for each reference to the source in the texts read back (once per
    record, though two of its fields hold it)."""
    if scan is None or found is None:
        return []
    first = {ref: name for name, ref in reversed(list(scan.scan_fields(found)))}
    return [
        Difference(row.entity, row.source_id, row.target_id or "", name, SOURCE_REFERENCE, ref)
        for ref, name in first.items()
    ]


def _rows(store: StagingStore, entity: str, sample: int | None, rng: random.Random) -> list[Any]:
    rows = list(store.ledger.iter_rows(status="done", entity=entity))
    if sample is not None and len(rows) > sample:
        rows = sorted(rng.sample(rows, sample), key=lambda r: r.source_id)
    return rows


async def verify(
    config: Config,
    services: Sequence[Service],
    *,
    environ: Mapping[str, str] = os.environ,
    sample: int | None = None,
    entities: Sequence[str] = (),
    seed: int | None = None,
) -> VerifyResult:
    """Compare every loaded record (or `sample` random ones per entity) with the target."""
    target = config.require_target("verify")
    rng = random.Random(seed)
    result = VerifyResult(started_at=_now())
    async with open_clients(config, services, environ, target) as (targets,):
        with open_store(config.staging_path) as store:
            ledger_counts = store.ledger.counts()
            for service, client in targets:
                if not service.plans(config):  # nothing of this service loads (forms)
                    continue
                parts = await service.target(config, client, store, read_only=True)
                verifier = parts.verifier
                left_out = Counter(record.entity for record in parts.left_out())
                listings = Listings()
                places = Places()
                for spec in parts.specs:
                    entity = spec.name
                    if entities and entity not in entities:
                        continue
                    verdict = EntityVerdict(entity)
                    states = ledger_counts.get(entity, {})
                    verdict.staged, verdict.loaded = sum(states.values()), states.get("done", 0)
                    verdict.not_carried = left_out[entity]
                    result.entities.append(verdict)
                    by_print = spec.fingerprint is not None
                    if not by_print and (verifier is None or entity not in verifier.compares):
                        verdict.compared = False
                        continue
                    for row in _rows(store, entity, sample, rng):
                        record = store.get_record(spec.staged, row.source_id)
                        if record is None:
                            continue
                        if spec.fingerprint is not None:
                            expected, found = await _by_fingerprint(
                                store, spec.fingerprint, row, record, listings
                            )
                            places.add(store, spec, row, record)
                        else:
                            assert verifier is not None  # checked above
                            expected, found = await verifier.compare(row, record)
                        found_here = differences(row, expected, found)
                        if isinstance(verifier, ExplainsDifferences) and found is not None:
                            found_here = _explained(verifier, row, expected, found, found_here)
                        found_here += source_references(parts.references, row, found)
                        verdict.checked += 1
                        verdict.found += found is not None
                        verdict.differing += bool(found_here)
                        result.differences.extend(found_here)
                result.differences += await places.extras(
                    store, listings, every_parent=sample is None
                )
            result.ended_at = _now()
            store.set_checkpoint(VERIFY_CHECKPOINT, result.as_dict())
            write_reports(store, services)  # the last run's report, now with this verify result
    log.info("verify_finished", differences=len(result.differences))
    return result


def _now() -> str:
    """This instant as the store writes times (UTC, milliseconds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


EXTRA = "(not in the source)"


@dataclass
class Places:
    """Where verified records live in the target (an issue, a page), per fingerprint, so that
    what else is there can be told: a record under a migrated parent that no ledger row holds
    was added by hand, or made twice. Where a record's place is its parent's target id (an
    issue's comments, a page's attachments), every loaded parent of that kind is a place, with
    or without migrated children."""

    seen: dict[int, tuple[Fingerprint, str, set[str], set[str]]] = field(default_factory=dict)
    parents: dict[int, set[str]] = field(default_factory=dict)  # parent entities that are places

    def add(
        self, store: StagingStore, spec: EntitySpec, row: LedgerRow, record: StagedRecord
    ) -> None:
        """Note the place of one verified record (only under a parent the load made: the
        organisation objects it reuses were there before)."""
        fingerprint = spec.fingerprint
        if fingerprint is None or spec.order.find_first or not row.parent_entity:
            return
        parent = store.ledger.target_id(row.parent_entity, row.parent or "")
        place = fingerprint.where(record, parent)
        if place is None:
            return
        _, _, places, claims = self.seen.setdefault(
            id(fingerprint), (fingerprint, spec.name, set(), set())
        )
        places.add(place)
        claims.update(spec.claim_group)
        if place == parent:
            self.parents.setdefault(id(fingerprint), set()).add(row.parent_entity)

    async def extras(
        self, store: StagingStore, listings: Listings, *, every_parent: bool = True
    ) -> list[Difference]:
        """A difference for each target record at a noted place that no done row holds."""
        found = []
        for key, (fingerprint, entity, places, claims) in self.seen.items():
            if every_parent:
                for parent in self.parents.get(key, set()):
                    places |= {
                        row.target_id
                        for row in store.ledger.iter_rows(status="done", entity=parent)
                        if row.target_id
                    }
            for place in sorted(places):
                items = await _listed(listings.of(fingerprint), place)
                found += _extras(store, entity, fingerprint, claims, place, items)
        return found


def _extras(
    store: StagingStore,
    entity: str,
    fingerprint: Fingerprint,
    claims: set[str],
    place: str,
    items: list[Fields],
) -> list[Difference]:
    """The records at `place` no done row holds: one like a record haul loaded there (the
    same identity) was made twice, any other was added in the target by a person (the
    target's own, no loss)."""
    identity = fingerprint.identity
    unclaimed = [item for item in items if not store.ledger.is_claimed(claims, str(item["id"]))]
    loaded = {
        tuple(_show(item.get(k)) for k in identity) for item in items if item not in unclaimed
    }
    found = []
    for item in unclaimed:
        target_id = str(item["id"])
        where = target_id if target_id.startswith(place) else f"{place}/{target_id}"
        shown = _show({k: item.get(k) for k in identity})
        twice = tuple(_show(item.get(k)) for k in identity) in loaded
        known = "" if twice else "added in the target"
        found.append(Difference(entity, "", where, "extra record", EXTRA, shown, known))
    return found


async def _listed(listing: Listing, place: str) -> list[Fields]:
    """What a place holds; nothing when the place itself is gone (a page or an entity that
    haul undo deleted: its records are reported missing, none is extra)."""
    try:
        return await listing(place)
    except NotFoundError:
        return []


class Listings:
    """The target listings verify has read, the last few kept: rows come in source-id order,
    so the siblings of one issue or page ask for its listing once."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[int, str], list[Fields]] = OrderedDict()

    def of(self, fingerprint: Fingerprint) -> Listing:
        """`fingerprint.listing`, through this cache."""

        async def listing(container: str) -> list[Fields]:
            key = (id(fingerprint), container)
            if key not in self._kept:
                self._kept[key] = await fingerprint.listing(container)
                if len(self._kept) > self._size:
                    self._kept.popitem(last=False)
            return self._kept[key]

        return listing


async def _by_fingerprint(
    store: StagingStore,
    fingerprint: Fingerprint,
    row: LedgerRow,
    record: StagedRecord,
    listings: Listings,
) -> tuple[Fields, Fields | None]:
    parent = (
        store.ledger.target_id(row.parent_entity, row.parent or "") if row.parent_entity else None
    )
    found = await fingerprint.read_back(
        record, parent, row.target_id or "", listings.of(fingerprint)
    )
    expected = fingerprint.compared(fingerprint.expected(record))
    return expected, None if found is None else fingerprint.compared(found)


def write_csv(path: Path, found: Sequence[Difference]) -> None:
    """Every difference as one CSV row (entity, source_id, target_id, field, source, target,
    kind)."""
    with open_private(path, newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["entity", "source_id", "target_id", "field", "source", "target", "kind"])
        for item in found:
            writer.writerow(astuple_row(item))


def astuple_row(item: Difference) -> list[str]:
    """One difference as CSV cells."""
    return [
        item.entity, item.source_id, item.target_id, item.field, item.source, item.target,
        item.kind,
    ]  # fmt: skip
