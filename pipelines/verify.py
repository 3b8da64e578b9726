"""Verify: read the target back and compare it with the staging store, record by record.

For every loaded (ledger `done`) record, a service's verifier gives two fingerprints of the
mapped fields: the staged record as the load maps it, and the target's record read back by its
target id. Any field that differs is a `Difference`; a record the target no longer has is one
too. Counts per entity: staged, loaded, checked, found in the target, differing.
"""

from __future__ import annotations

import csv
import json
import os
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import structlog

from haul.pipelines.config import Config
from haul.pipelines.run_report import VERIFY_CHECKPOINT, write_reports
from haul.pipelines.runner import open_clients, open_store
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

log = structlog.get_logger(__name__)

MISSING = "(missing in target)"


class Verifier(Protocol):
    """What a service brings to verify: both fingerprints of one loaded record."""

    async def compare(
        self, row: LedgerRow, record: StagedRecord
    ) -> tuple[dict[str, Any], dict[str, Any] | None]: ...


VerifierFactory = Callable[[Config, Any, StagingStore], Awaitable[Verifier]]


def verifiers() -> dict[str, VerifierFactory]:
    """Service name -> how to build its verifier for a target org."""
    from haul.pipelines.tracker.verify import tracker_verifier
    from haul.pipelines.wiki.verify import wiki_verifier

    return {"tracker": tracker_verifier, "wiki": wiki_verifier}


@dataclass(frozen=True)
class Difference:
    """One field of one record that differs between the staged data and the target."""

    entity: str
    source_id: str
    target_id: str
    field: str
    source: str
    target: str


@dataclass
class EntityVerdict:
    """One entity's counts: staged, loaded, checked, found in the target, differing."""

    entity: str
    staged: int = 0
    loaded: int = 0
    checked: int = 0
    found: int = 0
    differing: int = 0


@dataclass
class VerifyResult:
    """Every entity's verdict and every difference found."""

    entities: list[EntityVerdict] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entities": [asdict(v) for v in self.entities],
            "differences": [asdict(d) for d in self.differences[:200]],
            "difference_count": len(self.differences),
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


def _rows(store: StagingStore, entity: str, sample: int | None, rng: random.Random) -> list[Any]:
    rows = list(store.ledger.iter_rows(status="done", entity=entity))
    if sample is not None and len(rows) > sample:
        rows = sorted(rng.sample(rows, sample), key=lambda r: r.source_id)
    return rows


async def verify(
    config: Config,
    *,
    environ: Mapping[str, str] = os.environ,
    sample: int | None = None,
    entities: Sequence[str] = (),
    seed: int | None = None,
) -> VerifyResult:
    """Compare every loaded record (or `sample` random ones per entity) with the target."""
    target = config.require_target("verify")
    rng = random.Random(seed)
    result = VerifyResult()
    async with open_clients(config, environ, target) as (targets,):
        with open_store(config.staging_path) as store:
            ledger_counts = store.ledger.counts()
            for service, client in targets:
                factory = verifiers().get(service.name)
                if factory is None:  # nothing of this service is loaded (forms)
                    continue
                verifier = await factory(config, client, store)
                for entity in service.loadable:
                    if entities and entity not in entities:
                        continue
                    spec_staged = _staged_entity(service, entity)
                    verdict = EntityVerdict(entity)
                    states = ledger_counts.get(entity, {})
                    verdict.staged, verdict.loaded = sum(states.values()), states.get("done", 0)
                    for row in _rows(store, entity, sample, rng):
                        record = store.get_record(spec_staged, row.source_id)
                        if record is None:
                            continue
                        expected, found = await verifier.compare(row, record)
                        found_here = differences(row, expected, found)
                        verdict.checked += 1
                        verdict.found += found is not None
                        verdict.differing += bool(found_here)
                        result.differences.extend(found_here)
                    result.entities.append(verdict)
            store.set_checkpoint(VERIFY_CHECKPOINT, result.as_dict())
            write_reports(store)  # the last run's report, now with this verify result
    log.info("verify_finished", differences=len(result.differences))
    return result


def _staged_entity(service: Any, entity: str) -> str:
    """The staged entity a ledger entity loads from (most load from their own name)."""
    return str(service.staged_of.get(entity, entity))


def write_csv(path: Path, found: Sequence[Difference]) -> None:
    """Every difference as one CSV row (entity, source_id, target_id, field, source, target)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["entity", "source_id", "target_id", "field", "source", "target"])
        for item in found:
            writer.writerow(astuple_row(item))


def astuple_row(item: Difference) -> list[str]:
    """One difference as CSV cells."""
    return [item.entity, item.source_id, item.target_id, item.field, item.source, item.target]
