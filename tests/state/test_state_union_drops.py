"""A part run again after the last part gathered it may hold less (records deleted at the
source, ledger rows forgotten once deleted in the target): gathering it again drops those from
the union, and nothing the union made itself or another part holds."""

from pathlib import Path

import pytest

from haul.state import StagingStore
from haul.state.union import PartsHolding, gather

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def stage(path: Path, entity: str, *source_ids: str) -> None:
    """Stage `source_ids` of `entity` in the store at `path`, each loaded (a done row)."""
    with StagingStore.open(path) as store:
        store.upsert_records(entity, [{"source_id": s, "raw": {"id": s}} for s in source_ids])
        store.ledger.plan(
            {"entity": entity, "source_id": s, "payload_hash": "h"} for s in source_ids
        )
        for source_id in source_ids:
            store.ledger.done(entity, source_id, f"t-{source_id}")


def drop(path: Path, entity: str, source_id: str) -> None:
    """The part's rerun: the record is gone from the source, its row forgotten."""
    with StagingStore.open(path) as store:
        store.delete_record(entity, source_id)
        store.ledger.forget([entity], source_id)


def gather_part(union_path: Path, part: Path, run: int) -> dict[str, int]:
    name = part.parent.name
    with StagingStore.open(union_path) as union:
        return gather(union, part, f"shards.gathered.{name}", {"run": run}, name=name)


def held(union_path: Path, entity: str) -> tuple[list[str], list[str]]:
    """The union's records and ledger rows of `entity`."""
    with StagingStore.open(union_path) as union:
        records = sorted(r.source_id for r in union.iter_records(entity))
        rows = union.db.execute(
            "SELECT source_id FROM ledger WHERE entity = ? ORDER BY source_id", [entity]
        ).fetchall()
    return records, [row[0] for row in rows]


def test_what_a_part_dropped_leaves_the_union_and_nothing_else(tmp_path: Path) -> None:
    one, two = tmp_path / "1" / "haul.db", tmp_path / "2" / "haul.db"
    union_path = tmp_path / "last" / "haul.db"
    stage(one, "comment", "A-1/1", "A-1/2", "moved")
    stage(two, "comment", "B-1/1")
    gather_part(union_path, one, 1)
    stage(two, "comment", "moved")  # staged by the other shard too (moved between them)
    gather_part(union_path, two, 1)
    stage(union_path, "link", "A-1:B-1")  # the union's own row: a link across the shards
    drop(one, "comment", "A-1/2")
    drop(one, "comment", "moved")
    dropped = gather_part(union_path, one, 2)
    assert (dropped["records_dropped"], dropped["ledger_dropped"]) == (1, 1)
    assert held(union_path, "comment") == (["A-1/1", "B-1/1", "moved"],) * 2
    assert held(union_path, "link") == (["A-1:B-1"], ["A-1:B-1"])
    assert gather_part(union_path, one, 3)["records_dropped"] == 0  # once, not again


def test_a_first_gather_drops_nothing(tmp_path: Path) -> None:
    """A union the part was never gathered into (or gathered by an older haul): nothing is
    known of what the part held, so nothing is dropped."""
    one = tmp_path / "1" / "haul.db"
    union_path = tmp_path / "last" / "haul.db"
    stage(union_path, "comment", "A-1/1")
    stage(one, "comment", "A-1/2")
    assert gather_part(union_path, one, 1)["records_dropped"] == 0
    assert held(union_path, "comment")[0] == ["A-1/1", "A-1/2"]


def test_the_union_says_which_records_came_from_other_parts(tmp_path: Path) -> None:
    """A comment of shard 1 and the files it shows: its own issue's (the same part) are not
    apart from it, another shard's are, and so is one no part staged."""
    one, two = tmp_path / "1" / "haul.db", tmp_path / "2" / "haul.db"
    union_path = tmp_path / "last" / "haul.db"
    stage(one, "comment", "A-1/1")
    stage(one, "attachment", "A-1/10")
    stage(two, "attachment", "B-1/20")
    gather_part(union_path, one, 1)
    gather_part(union_path, two, 1)
    with StagingStore.open(union_path) as union:
        holding = PartsHolding(union)
        comment = ("comment", "A-1/1")
        assert holding.parts(*comment) == {"1"}
        assert not holding.apart(comment, [("attachment", "A-1/10")])
        assert holding.apart(comment, [("attachment", "A-1/10"), ("attachment", "B-1/20")])
        assert holding.apart(comment, [("attachment", "gone")])
