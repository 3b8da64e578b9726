"""The shard manifest as a file and the dealing of units into shards: deterministic, balanced,
a queue's window alone among queues, and every part's store its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from haul.pipelines.shards.manifest import (
    ManifestError,
    PartScope,
    read_manifest,
    store_for,
    write_manifest,
)
from haul.pipelines.shards.planning import manifest_of
from haul.pipelines.shards.units import Unit, balance, cut_large

pytestmark = pytest.mark.fast

S1, S2 = "1" * 24, "2" * 24  # survey ids


def queue(name: str, records: int) -> Unit:
    async def split(pieces: int) -> list[Unit]:
        share = records // pieces
        return [Unit(PartScope(queues=(name,), query=f"window {i}"), share) for i in range(pieces)]

    return Unit(PartScope(queues=(name,)), records, split)


def test_units_are_dealt_largest_first_to_the_lightest_shard() -> None:
    """Four units into two shards: each shard gets about half the records, the same way
    every time."""
    units = [queue("A", 40), queue("B", 30), Unit(PartScope(wiki_roots=("docs",)), 20),
             Unit(PartScope(surveys=("7",)), 10)]  # fmt: skip
    dealt = balance(units, 2)
    assert [sum(u.records for u in shard) for shard in dealt] == [50, 50]
    assert balance(units, 2) == dealt


def test_a_large_queue_is_cut_into_windows_each_in_a_shard_of_its_own_among_queues() -> None:
    """A queue of 90 records with two of 5 into three shards: its windows never share a shard
    with another queue (a shard's query narrows all its queues)."""
    units = asyncio.run(cut_large([queue("BIG", 90), queue("S1", 5), queue("S2", 5)], 3))
    dealt = balance(units, 3)
    for shard in dealt:
        windows = [u for u in shard if u.narrowed]
        assert not windows or len([u for u in shard if u.scope.queues]) == 1
    assert sum(len(shard) for shard in dealt) == len(units)


def test_the_manifest_reads_back_as_written(tmp_path: Path) -> None:
    """Written, read back: the same parts, each store its own, paths from the manifest's
    folder; the same units write the same bytes."""
    config = tmp_path / "haul.toml"
    config.write_text("")
    path = tmp_path / "plan" / "manifest.json"
    units = [queue("A", 40), queue("B", 30)]
    manifest = manifest_of(units, 2, config_path=config, manifest_path=path,
                           source_token_env="SRC_{part}")  # fmt: skip
    write_manifest(manifest, path)
    first_bytes = path.read_bytes()
    read = read_manifest(path)
    assert [part.name for part in read.parts] == ["first", "1", "2", "last"]
    assert read.part("last").needs == ("first", "1", "2")
    assert read.part("1").source_token_env == "SRC_1"
    assert read.config_path.resolve() == config.resolve()
    assert len({read.store_path(part) for part in read.parts}) == 4
    write_manifest(manifest_of(units, 2, config_path=config, manifest_path=path,
                               source_token_env="SRC_{part}"), path)  # fmt: skip
    assert path.read_bytes() == first_bytes


def test_a_part_the_manifest_lacks_and_a_template_without_part_are_usage_errors(
    tmp_path: Path,
) -> None:
    """An unknown part names the parts there are; a store template must hold {part}."""
    config = tmp_path / "haul.toml"
    path = tmp_path / "manifest.json"
    write_manifest(manifest_of([queue("A", 1)], 1, config_path=config, manifest_path=path), path)
    with pytest.raises(ManifestError, match="first, 1, last") as raised:
        read_manifest(path).part("7")
    assert raised.value.exit_code == 2
    with pytest.raises(ManifestError, match=r"\{part\}"):
        store_for("stores/one.db", "1")
    path.write_text('{"parts": []}')
    with pytest.raises(ManifestError, match="not a haul shard manifest"):
        read_manifest(path)


def test_a_part_config_narrows_the_base_to_its_scope_store_and_tokens(tmp_path: Path) -> None:
    """A shard's config: its queue under the base query AND its window, its wiki root and the
    mapping of it alone, its survey's back-fill rule alone, no planning layer, its own store
    and token variables; the first part keeps the queues and drops the trees' other services."""
    from haul.pipelines.config import parse_config
    from haul.pipelines.shards.manifest import Manifest, Part
    from haul.pipelines.shards.parts import part_config

    endpoint = {"tracker_url": "http://t/v3", "wiki_url": "http://w/v1",
                "forms_url": "http://f/v1", "token_env": "TOKEN", "org_id": "1"}  # fmt: skip
    base = parse_config(
        {
            "source": endpoint,
            "target": endpoint,
            "scope": {
                "queues": ["A", "B"],
                "query": "Type: bug",
                "wiki_roots": ["docs", "ops"],
                "surveys": [S1, S2],
                "entities": "all",
            },
            "mapping": {"wiki_roots": {"docs": "d2", "ops": "o2"}},
            "backfill": [
                {"survey": s, "into": "tracker", "queue": "A", "summary": "{x}"} for s in (S1, S2)
            ],
            "staging": {"path": "haul.db"},
        },
        base_dir=tmp_path,
    )
    scope = PartScope(queues=("A",), query='Created: < "2024"', wiki_roots=("ops",),
                      surveys=(S2,))  # fmt: skip
    shard = Part("1", ("first",), "stores/1/haul.db", 5, scope, "SRC_1", "DST_1")
    first = Part("first", (), "stores/first/haul.db")
    manifest = Manifest("haul.toml", (first, shard), folder=tmp_path)
    config = part_config(manifest, shard, base)
    assert config.scope.queues == ("A",)
    assert config.scope.query == 'Type: bug AND Created: < "2024"'
    assert config.scope.wiki_roots == ("ops",)
    assert dict(config.mapping.wiki_roots) == {"ops": "o2"}
    assert [rule.survey for rule in config.backfill] == [S2]
    assert config.scope.entity_types == ()
    assert config.staging_path == tmp_path / "stores" / "1" / "haul.db"
    assert (config.source.token_env, config.target and config.target.token_env) == (
        "SRC_1",
        "DST_1",
    )
    config = part_config(manifest, first, base)
    assert config.scope.queues == ("A", "B")
    assert (config.scope.wiki_roots, config.scope.surveys, config.backfill) == ((), (), ())
    assert config.source.token_env == "TOKEN"


def test_a_store_that_lists_no_issues_plans_the_organisation_of_every_scoped_queue(
    tmp_path: Path,
) -> None:
    """The first part of a manifest lists no issues (its shards do): its queues, and their
    configurations, are every queue in scope, not those its (absent) issues are in; a store
    that lists issues plans only the queues they are in."""
    from haul.pipelines.streams import NOT_STAGED
    from haul.pipelines.tracker.organisation.configured import plan_configs
    from haul.pipelines.tracker.organisation.dictionaries import plan_queues
    from haul.state.store import StagingStore

    def planned(store: StagingStore) -> tuple[list[str], list[str]]:
        queues = [item.record.source_id for item in plan_queues(store)]
        return sorted(queues), sorted(item.record.source_id for item in plan_configs(store))

    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("queue", [{"source_id": q, "raw": {"key": q}} for q in "ABC"])
        scoped = [{"source_id": q, "parent": q, "raw": {"key": q}} for q in "AB"]
        store.upsert_records("queue_config", scoped)
        issue = {"source_id": "1", "raw": {"key": "A-1", "queue": {"key": "A"}}}
        store.upsert_records("issue", [issue])
        assert planned(store) == (["A"], ["A"])
        store.db.execute("DELETE FROM records WHERE entity = 'issue'")
        store.set_checkpoint(NOT_STAGED, {"issue": "listed by the shards"})
        assert planned(store) == (["A", "B"], ["A", "B"])
