"""The key map: source id and key -> target id and key of every loaded record people link to.

Whoever sets up redirects (old issue URLs, old page URLs, old file links) or points a bot
at the new organisation needs one table: for each record haul loaded, what it was called at
the source and what it is called in the target. A service says which of its entities have
such an identity by registering an `Identity` (in its `export.py`):

    register_identity(Identity("issue", key=lambda record, config: record.raw.get("key"),
                               target_key=lambda target_id, record, config: target_id,
                               access=of_issue, service="tracker"))

`key_map` reads the ledger's done rows of those entities and their staged records, and
yields one row per record: `entity`, `source_id`, `source_key`, `target_id`, `target_key`,
`moved`. An issue's key is its key, a page's its slug, a tracker file's the path links give
it (`DEV-12/attachments/77`). `moved` is true when the target key is not the source key (a
remapped queue, a page under another root, an issue a later run moved after the source);
it is empty for records known by id alone (wiki files, planning objects).

The same rows are the export's `id_map` table and what `haul map` prints. A record whose
`access` rule says it is restricted is left out (and counted) unless `[export] restricted =
"include"`: a restricted page's slug is content too.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from haul.connectors.errors import StorageError
from haul.pipelines.config import Config, Export
from haul.pipelines.export.errors import ExportOptionError
from haul.pipelines.export.tables import (
    AccessRule,
    Column,
    Derived,
    ExportContext,
    Restriction,
    Table,
)
from haul.state.errors import StoreError, store_errors
from haul.state.store import StagedRecord, StagingStore

TABLE = "id_map"
COLUMNS = ("entity", "source_id", "source_key", "target_id", "target_key", "moved")
MAP_FORMATS = ("csv", "json")
ANY_ENTITY = "*"  # the table reads the ledger: it is written once anything was loaded


@dataclass(frozen=True)
class Lookups:
    """What a target key may be computed from beyond the record: the config (None when a
    caller has none) and the ledger's target id of another record (`target_of(entity, id)`)."""

    config: Config | None
    target_of: Callable[[str, str], str | None]


KeyOf = Callable[[StagedRecord, Config | None], Any]
TargetKeyOf = Callable[[str, StagedRecord, Lookups], Any]


def no_key(record: StagedRecord, config: Config | None) -> None:
    """For records known by their id alone."""
    return None


def no_target_key(target_id: str, record: StagedRecord, lookups: Lookups) -> None:
    """For records known by their id alone."""
    return None


@dataclass(frozen=True)
class Identity:
    """One ledger entity whose records people link to: `key` reads the source's key (or
    slug) of a staged record, `target_key` the target's from the ledger's target id, the
    record and the config; `access` is the record's restriction rule (None: always open)."""

    entity: str
    key: KeyOf = no_key
    target_key: TargetKeyOf = no_target_key
    access: AccessRule | None = None
    service: str = ""


IDENTITIES: dict[str, Identity] = {}


def register_identity(identity: Identity) -> Identity:
    """Add an entity to the key map (a second registration of one entity is a mistake)."""
    if identity.entity in IDENTITIES:
        raise ValueError(f"an identity for {identity.entity!r} is already registered")
    IDENTITIES[identity.entity] = identity
    return identity


def entities() -> tuple[str, ...]:
    """The entities the key map holds, in registration order."""
    return tuple(IDENTITIES)


@dataclass(frozen=True)
class MappedRecord:
    """One loaded record with its row of the key map."""

    record: StagedRecord
    identity: Identity
    row: dict[str, Any]


def mapped_records(
    store: StagingStore, config: Config | None, chosen: Iterable[str] = ()
) -> Iterator[MappedRecord]:
    """Every loaded record of the chosen entities (all when none is chosen) with its row, in
    (entity, source id) order; a done row whose record is no longer staged is skipped (it was
    deleted at the source: nothing links to it any more)."""
    wanted = set(chosen) or set(IDENTITIES)
    for entity in sorted(wanted & set(IDENTITIES)):
        identity = IDENTITIES[entity]
        for row in store.ledger.iter_rows(status="done", entity=entity):
            record = store.get_record(entity, row.source_id)
            if record is None or row.target_id is None:
                continue
            lookups = Lookups(config, store.ledger.target_id)
            yield MappedRecord(record, identity, _row(identity, record, row.target_id, lookups))


def _row(
    identity: Identity, record: StagedRecord, target_id: str, lookups: Lookups
) -> dict[str, Any]:
    source_key = identity.key(record, lookups.config)
    target_key = identity.target_key(target_id, record, lookups) if source_key else None
    return {
        "entity": identity.entity,
        "source_id": record.source_id,
        "source_key": source_key,
        "target_id": target_id,
        "target_key": target_key,
        "moved": None if source_key is None else str(source_key) != str(target_key),
    }


def restriction_of(mapped: MappedRecord, context: ExportContext) -> Restriction | None:
    """The restriction of a mapped record, by its entity's rule."""
    access = mapped.identity.access
    return None if access is None else access(mapped.record, context)


def key_map(
    store: StagingStore, context: ExportContext, chosen: Iterable[str] = ()
) -> Iterator[dict[str, Any]]:
    """The rows `haul map` prints: those of `mapped_records`, less the restricted ones unless
    the export includes restricted content (left out rows are counted in `context`)."""
    for mapped in mapped_records(store, context.config, chosen):
        if not context.withholds(TABLE, restriction_of(mapped, context)):
            yield mapped.row


def _subject(entity: str, source_id: str) -> str:
    return f"{entity}:{source_id}"


def _derive(context: ExportContext) -> Iterator[Derived]:
    for mapped in mapped_records(context.store, context.config):
        record = mapped.record
        yield Derived(_subject(record.entity, record.source_id), record.staged_at, [mapped.row])


def _access(subject: StagedRecord, context: ExportContext) -> Restriction | None:
    """The restriction of the record a row stands for (the subject names it)."""
    entity, _, source_id = subject.source_id.partition(":")
    identity = IDENTITIES.get(entity)
    if identity is None or identity.access is None:
        return None
    record = context.store.get_record(entity, source_id)
    return None if record is None else identity.access(record, context)


def _column(name: str, kind: Any, doc: str) -> Column:
    return Column(name, kind, doc, lambda item: item.get(name))


ID_MAP = Table(TABLE, ANY_ENTITY, (
    _column("entity", "string", "what the record is (issue, wiki_page, attachment, ...)"),
    _column("source_id", "string", "its id at the source (an issue's key, a page's slug)"),
    _column("source_key", "string", "its key or slug at the source (empty: known by id alone)"),
    _column("target_id", "string", "its id in the target, as the load recorded it"),
    _column("target_key", "string", "its key or slug in the target"),
    _column("moved", "bool", "whether the target key differs from the source key, so a link "
                             "by the old key needs a redirect (a file's always does: its id "
                             "changes); empty: no key"),
), doc="the key map: every loaded issue, page, file, planning object with its target id and "
       "key, for redirects and bots (also `haul map`)",
   derive=_derive, access=_access, service="every service")  # fmt: skip


@dataclass
class KeyMap:
    """What `haul map` prints: the rows, and how many restricted ones were left out."""

    rows: list[dict[str, Any]]
    left_out: int = 0
    entities: tuple[str, ...] = field(default_factory=tuple)


def read_key_map(config: Config, chosen: Iterable[str] = ()) -> KeyMap:
    """The key map of the config's staging store (read, never written), of the chosen
    entities (all when none is); ExportOptionError for an entity it does not hold or a store
    that does not exist yet."""
    wanted = tuple(chosen)
    if unknown := sorted(set(wanted) - set(IDENTITIES)):
        raise ExportOptionError(
            f"--entity: no {', '.join(unknown)} in the key map (choose from "
            f"{', '.join(sorted(IDENTITIES))})"
        )
    path = config.staging_path
    if not path.is_file():
        raise ExportOptionError(f"nothing loaded yet: {path} does not exist (run haul run first)")
    try:
        with StagingStore.open_readonly(path) as store, store_errors(path), store.snapshot():
            context = ExportContext(store, settings=config.export or Export(), config=config)
            rows = list(key_map(store, context, wanted))
            return KeyMap(rows, context.left_out[TABLE], wanted or entities())
    except StoreError as exc:
        raise StorageError(str(exc)) from exc


def write_key_map(key_map: KeyMap, fmt: str, out: TextIO) -> None:
    """`key_map`'s rows on `out`: CSV with a header (`moved` as true/false, empty when the
    record has no key), or a JSON list of objects."""
    if fmt == "json":
        json.dump(key_map.rows, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in key_map.rows:
        moved = row["moved"]
        writer.writerow({**row, "moved": "" if moved is None else str(moved).lower()})
