"""One export problem never stops the others: a grid title too long for a file name, a survey
whose questions cannot make a table. A real store in a temp folder, exported by `haul export`
as a subprocess (as the nightly job runs it), its files read back."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from haul.pipelines.export import duck
from haul.state.store import StagingStore
from tests.helpers.export_fixtures import only_folder, run_haul

OPEN = {"access_type": "all_staff", "all_staff_role": "reader"}
BROKEN, GOOD = "5" * 24, "6" * 24
LONG_TITLE = "Квартальный отчёт по закупкам оборудования и лицензий " * 4  # ~440 bytes


def grid(grid_id: str, title: str) -> dict:
    return {
        "id": grid_id,
        "title": title,
        "structure": {"columns": [{"slug": "item", "title": "Item", "type": "string"}]},
        "rows": [{"id": "r1", "row": ["laptops"]}, {"id": "r2", "row": ["licences"]}],
    }


# a grid whose column has no slug: DuckDB refuses a nameless column while the table is written
NAMELESS = {
    "id": "0a0b0c0d0e",
    "title": "Stock",
    "structure": {"columns": [{"slug": "", "title": "?", "type": "string"}]},
    "rows": [{"id": "r1", "row": ["chairs"]}],
}


def stage(path: Path) -> None:
    """An open page with two grids whose long titles differ only at their end, and a survey
    asking a question whose slug is that of the answers table's own first column."""
    with StagingStore.open(path) as store:
        page = {"slug": "team/budget", "id": 7, "title": "Budget",
                "access_policy": OPEN, "access_lists": {"direct": [], "inherited": []}}  # fmt: skip
        store.upsert_records("wiki_page", [{"source_id": "team/budget", "raw": page}])
        store.upsert_records("wiki_grid", [
            {"source_id": "a1b2c3d4e5", "parent": "team/budget", "raw": grid("a1b2c3d4e5", LONG_TITLE + "2023")},
            {"source_id": "f6a7b8c9d0", "parent": "team/budget", "raw": grid("f6a7b8c9d0", LONG_TITLE + "2024")},
            {"source_id": "0a0b0c0d0e", "parent": "team/budget", "raw": NAMELESS},
        ])  # fmt: skip
        broken = {"name": "Lunch", "questions": [{"slug": "answer_id", "type": "string"}]}
        good = {
            "name": "Dinner",
            "questions": [
                {"slug": "dish", "type": "string"},
                {"slug": "guests", "type": "integer"},
            ],
        }
        store.upsert_records("survey", [
            {"source_id": BROKEN, "raw": broken}, {"source_id": GOOD, "raw": good},
        ])  # fmt: skip
        store.upsert_records("survey_answer", [
            {"source_id": "b/1", "parent": BROKEN, "raw": {"id": 1, "values": {"answer_id": "x"}}},
            {"source_id": "g/1", "parent": GOOD, "raw": {"id": 1, "values": {"dish": "soup", "guests": 10**30}}},
        ])  # fmt: skip


@pytest.fixture
def config(tmp_path: Path) -> Path:
    stage(tmp_path / "haul.db")
    path = tmp_path / "haul.toml"
    path.write_text(
        '[source]\nwiki_url = "https://wiki.example/v1"\nforms_url = "https://forms.example/v1"\n'
        'org_id = "1"\ntoken_env = "T"\n\n[scope]\nwiki_roots = ["team"]\nsurveys = ["'
        + f'{BROKEN}", "{GOOD}'
        + '"]\n\n[staging]\npath = "haul.db"\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("fmt", ["csv", "parquet", "xlsx"])
def test_a_title_too_long_and_a_broken_table_stop_nothing_else(config: Path, fmt: str) -> None:
    """Each long-titled grid is written under a name the file system takes (cut, with a
    digest: the two stay apart); one survey's answers cannot be a table (two `answer_id`
    columns), and one grid fails while written (DuckDB refuses its nameless column): both are
    named as failed in the manifest and the summary, nothing of them is left, every other
    table (the other survey's too) is written, and the export exits 3."""
    out = config.parent / "exports"

    done = run_haul("export", "--config", config, "--out", out, "--format", fmt)

    assert done.returncode == 3, done.stderr
    folder = only_folder(out)
    manifest = json.loads((folder / "manifest.json").read_text())
    grids = [entry for entry in manifest["files"] if entry["table"].startswith("wiki_grid_")]
    assert len(grids) == 2 and grids[0]["file"] != grids[1]["file"]
    for entry in grids:
        assert len(entry["file"].encode()) < 255 and entry["rows"] == 2
        assert (folder / entry["file"]).is_file()
        assert entry["table"].startswith("wiki_grid_квартальный_отчёт")  # the whole name kept
    if fmt == "parquet":
        assert list(pd.read_parquet(folder / grids[0]["file"])["item"]) == ["laptops", "licences"]
    tables = {entry["table"] for entry in manifest["files"]}
    dinner = f"survey_dinner_{GOOD[:8]}"
    assert tables >= {"wiki_pages", "surveys", dinner}
    assert sorted(manifest["failed"]) == [f"survey {BROKEN}", "wiki_grid_stock_0a0b0c0d"]
    assert "answer_id appear twice" in manifest["failed"][f"survey {BROKEN}"]
    assert "zero-length" in manifest["failed"]["wiki_grid_stock_0a0b0c0d"]
    assert f"failed: survey {BROKEN}: ValueError" in done.stdout
    assert "failed: wiki_grid_stock_0a0b0c0d: " in done.stdout and "exit 3" in done.stdout
    assert not any(path.name.startswith("wiki_grid_stock") for path in folder.iterdir())
    database = duck.table_rows(folder / duck.DATABASE)
    assert "wiki_grid_stock_0a0b0c0d" not in database and database[dinner] == 1
    # a number too large for a 64-bit column is an empty cell, as any unreadable value
    assert manifest["tables"][dinner]["rows"] == 1


def test_keep_removes_only_the_folders_haul_wrote(config: Path) -> None:
    """`export --keep 1` in a folder where a person keeps dated folders of their own (one
    with files, one with another tool's manifest.json) removes haul's older export, and
    nothing of theirs."""
    out = config.parent / "shared"
    theirs = out / "2020-01-01"
    theirs.mkdir(parents=True)
    (theirs / "report.xlsx").write_bytes(b"a person's report")
    tool = out / "2020-01-02"
    tool.mkdir()
    (tool / "manifest.json").write_text('{"tool": "backup", "files": ["a"]}')

    first = run_haul("export", "--config", config, "--out", out, "--entities", "wiki_pages")
    assert first.returncode == 0, first.stderr
    haul_first = (out / "latest").resolve()
    second = run_haul(
        "export", "--config", config, "--out", out, "--entities", "wiki_pages", "--keep", "1"
    )

    assert second.returncode == 0, second.stderr
    assert not haul_first.exists()
    assert f"removed (--keep): {haul_first.name}" in second.stdout
    assert (theirs / "report.xlsx").read_bytes() == b"a person's report"
    assert (tool / "manifest.json").is_file()
    assert sorted(path.name for path in out.iterdir() if not path.name.startswith(".")) == [
        "2020-01-01",
        "2020-01-02",
        (out / "latest").resolve().name,
        "latest",
    ]
