"""A manifest pins its config and its stores: a part whose config now sends records elsewhere
is refused before it runs, and a store template that escapes the manifest's folder or folds
parts into one store is refused by the plan (exit 2 both)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.shards.manifest import (
    Manifest,
    ManifestError,
    PartScope,
    pin,
    read_manifest,
    write_manifest,
)
from haul.pipelines.shards.parts import PartNotReady, run_part_async
from haul.pipelines.shards.planning import manifest_of
from haul.pipelines.shards.units import Unit

CONFIG = """
[source]
tracker_url = "http://source.test/v3"
org_id = "1"
token_env = "SRC_TOKEN"

[target]
tracker_url = "http://target.test/v3"
org_id = "2"
token_env = "DST_TOKEN"

[scope]
queues = ["A", "B"]

[mapping]
queues = { "A" = "NEW" }

[staging]
path = "haul.db"
"""
UNITS = [Unit(PartScope(queues=("A",)), 40), Unit(PartScope(queues=("B",)), 30)]


def planned(folder: Path, **options: str) -> tuple[Path, Manifest]:
    """haul.toml and a manifest of it in `folder` (written, read back)."""
    config = folder / "haul.toml"
    config.write_text(CONFIG, encoding="utf-8")
    path = folder / "manifest.json"
    made = manifest_of(UNITS, 2, config_path=config, manifest_path=path,
                       pinned=pin(load_config(config)), **options)  # fmt: skip
    write_manifest(made, path)
    return config, read_manifest(path)


@pytest.mark.fast
@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('org_id = "2"', 'org_id = "3"', "target.org_id"),
        ("http://target.test/v3", "http://elsewhere.test/v3", "target.tracker_url"),
        ('{ "A" = "NEW" }', '{ "A" = "OLD" }', "mapping.queues"),
    ],
)
def test_a_part_whose_config_changed_where_records_go_is_refused(
    tmp_path: Path, old: str, new: str, named: str
) -> None:
    """After the plan, [target] (or a mapping) is pointed elsewhere: the part stops with
    exit 2 naming the setting, before it makes its store or asks any service anything."""
    config, manifest = planned(tmp_path)
    config.write_text(CONFIG.replace(old, new), encoding="utf-8")

    with pytest.raises(ManifestError) as refused:
        asyncio.run(run_part_async(manifest, "1", all_services(), environ={}))

    assert refused.value.exit_code == 2
    assert named in str(refused.value)
    assert not manifest.store_path(manifest.part("1")).exists()


@pytest.mark.fast
def test_settings_that_route_nothing_may_change(tmp_path: Path) -> None:
    """A token variable or a tuning knob is not pinned: the part goes on to its next check
    (here: the first part has not run, so a shard is not ready)."""
    config, manifest = planned(tmp_path)
    config.write_text(
        CONFIG.replace('"DST_TOKEN"', '"OTHER_TOKEN"') + "\n[tuning]\nconcurrency = 4\n",
        encoding="utf-8",
    )
    with pytest.raises(PartNotReady, match="needs part first"):
        asyncio.run(run_part_async(manifest, "1", all_services(), environ={}))


@pytest.mark.fast
@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("stores/{part}/../haul.db", "would share the store"),
        ("../stores/{part}/haul.db", "outside the manifest's folder"),
        ("/tmp/elsewhere/{part}/haul.db", "outside the manifest's folder"),
    ],
)
def test_a_store_template_that_escapes_or_shares_is_refused(
    tmp_path: Path, template: str, said: str
) -> None:
    """Every part's store must be a file of its own inside the manifest's folder."""
    with pytest.raises(ManifestError, match=said) as refused:
        planned(tmp_path, store_template=template)
    assert refused.value.exit_code == 2
    assert not (tmp_path / "manifest.json").exists()


@pytest.mark.fast
def test_a_manifest_edited_so_that_parts_share_a_store_is_refused(tmp_path: Path) -> None:
    """A manifest written by hand (or by an older haul) is checked when read, so no part runs
    on another part's store."""
    planned(tmp_path)
    path = tmp_path / "manifest.json"
    path.write_text(path.read_text().replace("stores/2/haul.db", "stores/1/haul.db"))
    with pytest.raises(ManifestError, match="parts 1 and 2 would share the store"):
        read_manifest(path)


def test_haul_run_of_a_part_after_the_target_changed_exits_2(tmp_path: Path) -> None:
    """The command line: exit 2, the setting named on stderr's last line, no traceback."""
    from tests.helpers.cli_fixtures import run_haul

    config, _ = planned(tmp_path)
    config.write_text(CONFIG.replace('org_id = "2"', 'org_id = "3"'), encoding="utf-8")

    ran = run_haul("run", "--manifest", tmp_path / "manifest.json", "--part", "first")

    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "target.org_id" in ran.stderr.strip().splitlines()[-1]
    assert "Traceback" not in ran.stderr
