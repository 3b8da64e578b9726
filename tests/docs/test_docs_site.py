"""The docs site says what the code does: its configuration reference names every key of the
config model, its table reference every export table, every example config in it (and in the
README) is one haul accepts, and the README stays a first screen that links the rest."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config import ConfigError, config_json_schema, load_config
from haul.pipelines.export.command import service_tables
from haul.pipelines.registry import services
from tests.helpers.docs_pages import README, ROOT, Block, blocks, built_markdown, pages

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

README_MOST_LINES = 200
# filled in by the loader (each side is told its name), not a key a file gives
NOT_KEYS = {"section"}


def schema_keys() -> dict[str, set[str]]:
    """Section -> its keys, read from the config's JSON Schema (`haul config-schema`), which
    pydantic makes from the model on its own: the reference is checked against it, not
    against itself."""
    schema = config_json_schema()
    sections: dict[str, set[str]] = {}
    for name, prop in schema["properties"].items():
        ref = re.search(r"#/\$defs/(\w+)", str(prop))
        assert ref, f"[{name}] is not a table"
        keys = set(schema["$defs"][ref.group(1)]["properties"]) - NOT_KEYS
        sections[name] = keys
    return sections


def reference_keys(markdown: str) -> dict[str, set[str]]:
    """Section -> the keys the reference's tables list under its heading (a heading may name
    two sections, `[source] and [target]`)."""
    found: dict[str, set[str]] = {}
    names: list[str] = []
    for line in markdown.split("\n"):
        if line.startswith("## "):
            names = re.findall(r"\[\[?(\w+)\]?\]", line)
        elif (row := re.match(r"\| `(\w+)` \|", line)) and names:
            for name in names:
                found.setdefault(name, set()).add(row.group(1))
    return found


def test_the_configuration_reference_names_every_key_of_the_model() -> None:
    """Every section of the config and every key of each appear in the built reference page,
    and it names no key the model lacks."""
    built = built_markdown("reference/configuration.md")
    assert "<!-- generated" not in built
    assert reference_keys(built) == schema_keys()


def test_the_configuration_reference_gives_each_keys_type_default_and_meaning() -> None:
    """A row per key: its type, its default ("required" when it has none) and what it does."""
    built = built_markdown("reference/configuration.md")
    rows = {
        row.group(1): row.group(2).split(" | ")
        for row in re.finditer(r"^\| `(\w+)` \| (.*) \|$", built, re.M)
    }
    assert rows["concurrency"][1] == "`32`" and rows["token_env"][1] == "required"
    assert rows["rate_limit_patience"][1] == '`"15m"`'
    assert "duration" in rows["rate_limit_patience"][0]
    assert all(len(cells) == 3 and cells[2].strip() for cells in rows.values()), rows


def test_the_table_reference_lists_every_export_table() -> None:
    """The built tables page holds every table and family the services export, each under a
    heading of its name, and each table's columns."""
    built = built_markdown("reference/tables.md")
    registry = service_tables(services())
    for table in registry.tables:
        assert f"### `{table.name}`\n\n({table.service}, {table.origin}):" in built, table.name
        assert all(f"| `{column.name}` |" in built for column in table.all_columns), table.name
    for family in registry.families:
        assert f"### `{family.name}`\n\n({family.service}):" in built, family.name


def config_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page, "toml")]


@pytest.mark.parametrize("block", config_blocks(), ids=str)
def test_every_example_config_is_one_haul_accepts(block: Block, tmp_path: Path) -> None:
    """Each ```toml block of the docs and the README, written to a folder as haul.toml (the
    files it names beside it), loads with haul's own loader; a block marked as only part of a
    config (`<!-- partial config ... -->` on the line before) is TOML at least."""
    data = tomllib.loads(block.body)
    if block.partial:
        return
    for path in named_files(data):
        (tmp_path / path).write_text("", encoding="utf-8")
    (tmp_path / "haul.toml").write_text(block.body, encoding="utf-8")
    try:
        load_config(tmp_path / "haul.toml")
    except ConfigError as error:
        pytest.fail(f"{block}: {error}")


def named_files(data: dict[str, Any]) -> list[str]:
    """The files a config names that must exist when it is loaded."""
    mapping, model = data.get("mapping", {}), data.get("model", {})
    wanted = [mapping.get("users_file"), mapping.get("groups_file"), model.get("holidays_file")]
    return [name for name in wanted if name]


def test_only_a_few_example_configs_are_partial() -> None:
    """Marking a block partial skips its validation: kept for the few that show one section."""
    partial = [str(block) for block in config_blocks() if block.partial]
    assert len(partial) <= 3, partial
    assert len(config_blocks()) - len(partial) >= 5


def test_the_readme_is_a_first_screen_that_links_the_rest() -> None:
    """At most 200 lines; `make demo` and `make test` first (CI runs the README's test
    command), then init, check, run, verify; every link it gives to a file resolves."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MOST_LINES
    first = [line for block in blocks(README, "sh") for line in block.body.splitlines()]
    commands = [line.split("#")[0].split()[:2] for line in first if line.strip()]
    assert commands[:2] == [["make", "demo"], ["make", "test"]]
    verbs = [words[1] for words in commands if words and words[0].endswith("haul")]
    assert verbs[:4] == ["init", "check", "run", "verify"]
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert links and all((ROOT / link).exists() for link in links), links
