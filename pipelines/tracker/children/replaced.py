"""A file replaced at the source under its name: found by the drain, replaced in the target.

The tracker keeps a file's bytes for good: a person replaces a file by deleting it and
uploading another under the same name (a new id). Read again, the issue lists a new file and
no longer the old one: the drain pairs them by name while the old record is still staged
(`replaced_files`), with both sizes and sha256 checksums, and stages one `attachment_replaced`
record under the issue. The new file loads as any new file; the replacement's ledger row
hangs under it, so it runs only once the new bytes are in the target, and deletes the old file
there, whatever `[sync] deletions` says: the person meant one file under that name, not two.
Exactly once: a DELETE of a file gone already is harmless, and `find` says done as soon as
the target no longer lists the old one. A new upload that fails leaves the old file in place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from haul.connectors.tracker import TrackerClient
from haul.pipelines.services import Entity
from haul.pipelines.specs import EntitySpec, Planned, Ref
from haul.pipelines.sync.preview import Change
from haul.pipelines.tracker.issues.kinds import Kind, KindPreview, TreeLoad
from haul.state.ledger import LedgerRow
from haul.state.store import StagedRecord, StagingStore

REPLACED = "attachment_replaced"  # the staged entity and its ledger rows

Row = dict[str, Any]


def replaced_files(store: StagingStore, issue: str, listed: list[Row]) -> list[Row]:
    """The replacements an issue's new listing of files shows (see the module docstring),
    with those staged before whose new file is still listed."""
    if not listed:  # no file now: nothing replaced, nothing to keep (asks the store nothing)
        return []
    new = {str(row["source_id"]): row for row in listed}
    by_name = {str(row["raw"].get("name")): row for row in listed}
    before = list(store.iter_records("attachment", parent=issue))
    rows = [
        _replacement(old, by_name[name])
        for old in before
        if old.source_id not in new
        and (name := str(old.raw.get("name"))) in by_name
        and store.get_record("attachment", str(by_name[name]["source_id"])) is None
    ]
    made = {row["source_id"] for row in rows}
    kept = [
        {"source_id": r.source_id, "parent": issue, "updated_at": r.updated_at, "raw": r.raw}
        for r in store.iter_records(REPLACED, parent=issue)
        if r.raw["new"] in new and r.source_id not in made
    ]
    return rows + kept


def _replacement(old: StagedRecord, new: Row) -> Row:
    raw = {
        "name": old.raw.get("name"),
        "old": old.source_id,
        "new": str(new["source_id"]),
        "old_size": old.raw.get("size"),
        "old_sha256": old.blob,
        "new_size": new["raw"].get("size"),
        "new_sha256": new.get("blob"),
    }
    return {"source_id": old.source_id, "parent": old.parent, "updated_at": new["updated_at"],
            "raw": raw}  # fmt: skip


def described(raw: dict[str, Any]) -> str:
    """The replacement in words: which file, and how its bytes differ."""
    same = (raw.get("old_size"), raw.get("old_sha256")) == (raw.get("new_size"), raw["new_sha256"])
    bytes_ = "the same bytes" if same else f"{raw.get('old_size')} -> {raw.get('new_size')} bytes"
    return f"{raw['name']}: uploaded again at the source ({bytes_}); the old file is deleted"


def plan_replacements(store: StagingStore) -> Iterator[Planned]:
    """One row per replacement of a file loaded on its issue, under the new file."""
    for record in store.iter_records(REPLACED):
        old = store.ledger.get("attachment", record.raw["old"])
        if old is not None and old.status == "done":
            yield Planned(record, Ref("attachment", record.raw["new"]))


@dataclass
class FileReplacement:
    """Deletes, in one target org, the old file of each replacement."""

    client: TrackerClient
    store: StagingStore
    target_key: Callable[[str], str]
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)

    def spec(self) -> EntitySpec:
        return EntitySpec(REPLACED, REPLACED, plan_replacements, self.send, self.find)

    def _old(self, record: StagedRecord) -> str | None:
        return self.store.ledger.target_id("attachment", record.raw["old"])

    async def send(self, record: StagedRecord, parent: str | None) -> str:
        old = self._old(record)
        if old is None:
            return "nothing in the target to replace"
        await self.client.delete_record(self.target_key(record.parent or ""), "attachments", old)
        self.changes[("attachment", "replaced")] += 1
        return f"replaced {old}"

    async def find(self, record: StagedRecord, parent: str | None, unclaimed: Any) -> str | None:
        """Done once the target no longer lists the old file."""
        old = self._old(record)
        listed = await self.client.list_attachments(self.target_key(record.parent or ""))
        if old is not None and old in {str(item.get("id")) for item in listed}:
            return None
        return f"replaced {old}"


def replacement_spec(load: TreeLoad) -> EntitySpec:
    """Old files deleted once their replacements are in."""
    return FileReplacement(load.client, load.store, load.keys.key, load.changes).spec()


# a file uploaded again under its name: planned once every attachment is
class ReplacementPreview(KindPreview):
    """`haul plan`'s preview of a replacement: the old copy's delete; and a mirrored deletion
    of a file a replacement deletes itself is a skip."""

    def __init__(self, load: TreeLoad) -> None:
        super().__init__()
        self.store = load.store

    def pending(self, row: LedgerRow, record: StagedRecord) -> Change | None:
        target = row.target_id or ""
        if row.entity == REPLACED:
            return Change(row.entity, row.source_id, target, "delete", (), described(record.raw))
        replaced = self.store.get_record(REPLACED, str(record.raw.get("source_id")))
        if row.entity == "deletion" and replaced is not None:
            return Change(
                row.entity, row.source_id, target, "skip", (), "deleted by its replacement"
            )
        return None


REPLACEMENT = Kind(
    Entity(REPLACED, optional=True),
    plan_replacements,
    replacement_spec,
    preview=ReplacementPreview,
)
