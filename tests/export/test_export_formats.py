"""`haul export` in each format, read back with pandas: one file per staged table with as many
rows as the store holds, in the documented types, listed in the manifest.

One extract of a tiny sandbox org serves the module; each format is exported once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from haul.pipelines.export.layout import sha256_of
from haul.pipelines.export.values import parse_duration_seconds
from haul.pipelines.export.writers import arrow_schema
from haul.state.store import StagingStore
from tests.helpers.export_fixtures import Staged, expected_rows, only_folder, tracker_tables

FORMATS = ("csv", "parquet", "xlsx")


@pytest.fixture(scope="module")
def exports(staged: Staged) -> dict[str, Path]:
    """Format -> the dated folder one `haul export` wrote."""
    folders = {}
    for fmt in FORMATS:
        out = staged.directory / f"out-{fmt}"
        done = staged.haul("export", "--config", staged.config, "--format", fmt, "--out", out)
        assert done.returncode == 0, done.stderr
        folders[fmt] = only_folder(out)
    return folders


def columns_of(tables: dict[str, Any], table: str, kind: str) -> list[str]:
    return [c.name for c in tables[table].all_columns if c.type == kind]


def test_csv_has_every_staged_row_in_the_documented_types(staged: Staged, exports: dict) -> None:
    """Each CSV has a header and one row per staged record (per checklist item); its instants
    read as UTC timestamps, its counts as integers, durations as seconds."""
    expected = expected_rows(staged.store_path)
    tables = tracker_tables(staged.store_path)
    folder = exports["csv"]
    assert sorted(path.stem for path in folder.glob("*.csv")) == sorted(expected)
    for table, rows in expected.items():
        frame = pd.read_csv(
            folder / f"{table}.csv", parse_dates=columns_of(tables, table, "timestamp")
        )
        assert len(frame) == rows, table
        assert list(frame.columns) == [c.name for c in tables[table].all_columns]
        for column in columns_of(tables, table, "timestamp"):
            if frame[column].isna().all():  # an empty column: CSV says nothing of its type
                continue
            assert (
                str(frame[column].dtype).startswith("datetime64")
                and frame[column].dt.tz is not None
            ), (table, column)
    worklogs = pd.read_csv(folder / "worklogs.csv", dtype={"id": str})
    assert worklogs["duration_s"].dtype == "int64"
    assert worklogs["duration_s"].tolist() == [
        parse_duration_seconds(d) for d in worklogs["duration"]
    ]
    assert (worklogs["duration_s"] > 0).all()
    attachments = pd.read_csv(folder / "attachments.csv")
    assert attachments["size_bytes"].dtype == "int64"


def test_parquet_carries_the_schema_of_the_registry(staged: Staged, exports: dict) -> None:
    """Each Parquet file's schema is the table's: timestamp[us, tz=UTC], int64, bool, string;
    pandas reads tz-aware timestamps and integers back, and every staged row is there."""
    expected = expected_rows(staged.store_path)
    tables = tracker_tables(staged.store_path)
    folder = exports["parquet"]
    for table, rows in expected.items():
        schema = pq.read_schema(folder / f"{table}.parquet")
        assert schema.equals(arrow_schema(tables[table]), check_metadata=False), table
        frame = pd.read_parquet(folder / f"{table}.parquet", dtype_backend="numpy_nullable")
        assert len(frame) == rows, table
        for column in columns_of(tables, table, "timestamp"):
            assert str(frame[column].dtype) == "datetime64[us, UTC]", (table, column)
        for column in columns_of(tables, table, "int"):
            assert str(frame[column].dtype) == "Int64", (table, column)
        for column in columns_of(tables, table, "bool"):
            assert str(frame[column].dtype) == "boolean", (table, column)
    issues = pd.read_parquet(folder / "issues.parquet")
    assert issues["created_by_login"].notna().all()  # logins found through the staged users
    assert issues["key"].is_unique


def test_xlsx_has_a_sheet_with_a_header_per_table(staged: Staged, exports: dict) -> None:
    """Each workbook has one sheet named after its table, a header row and every row;
    instants are Excel dates (UTC, Excel has no zones), counts integers."""
    expected = expected_rows(staged.store_path)
    tables = tracker_tables(staged.store_path)
    folder = exports["xlsx"]
    for table, rows in expected.items():
        sheets = pd.read_excel(folder / f"{table}.xlsx", sheet_name=None)
        assert list(sheets) == [table]
        frame = sheets[table]
        assert len(frame) == rows, table
        assert list(frame.columns) == [c.name for c in tables[table].all_columns]
        for column in columns_of(tables, table, "timestamp"):
            if frame[column].notna().any():
                assert str(frame[column].dtype).startswith("datetime64"), (table, column)
    worklogs = pd.read_excel(folder / "worklogs.xlsx")
    assert worklogs["duration_s"].dtype == "int64"


def test_the_manifest_lists_each_file_with_its_rows_bytes_and_hash(
    staged: Staged, exports: dict
) -> None:
    """manifest.json names every file with its table, entity, rows, bytes and sha256, the
    extract run it came from, the store's watermark, since, and haul's version."""
    expected = expected_rows(staged.store_path)
    with StagingStore.open_readonly(staged.store_path) as store:
        run = store.latest_run("extract")
        watermark = store.newest_staged_at()
    for fmt, folder in exports.items():
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["format"] == fmt
        assert manifest["run_id"] == run["id"]
        assert manifest["watermark"] == watermark
        assert manifest["since"] is None
        assert manifest["haul_version"]
        listed = {entry["file"]: entry for entry in manifest["files"]}
        assert sorted(listed) == sorted(f"{table}.{fmt}" for table in expected)
        for name, entry in listed.items():
            assert entry["rows"] == expected[entry["table"]]
            assert entry["bytes"] == (folder / name).stat().st_size
            assert entry["sha256"] == sha256_of(folder / name)
        assert manifest["duckdb"]["tables"] == expected
        assert manifest["duckdb"]["sha256"] == sha256_of(folder / "haul.duckdb")
        every = [*listed, "haul.duckdb", "manifest.json", *manifest["pages"]]
        assert sorted(path.name for path in folder.iterdir()) == sorted(every)


def test_entities_chooses_tables_by_table_or_entity_name(staged: Staged) -> None:
    """--entities takes staged entity names (issue: the issues and their custom fields) or
    table names (checklist_items)."""
    out = staged.directory / "some"
    done = staged.haul(
        "export", "--config", staged.config, "--out", out, "--entities", "issue,checklist_items"
    )
    assert done.returncode == 0, done.stderr
    folder = only_folder(out)
    assert sorted(path.name for path in folder.iterdir()) == [
        "checklist_items.csv",
        "haul.duckdb",
        "issue_custom_fields.csv",
        "issues.csv",
        "manifest.json",
    ]
