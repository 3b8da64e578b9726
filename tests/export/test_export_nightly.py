"""Night after night into one folder: dated folders, `latest`, `--since last` after an
incremental extract carrying only what changed, and `--keep`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from haul.connectors.tracker import TrackerClient
from tests.helpers.export_fixtures import Staged, expected_rows


async def change_the_source(info: dict, key: str) -> None:
    """Rename one issue and comment on it, as someone at the source would overnight."""
    client = TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"]["source"]
    )
    async with client:
        await client.update_issue(key, {"summary": "Renamed overnight"})
        await client.core.request("POST", f"/issues/{key}/comments", json={"text": "late note"})


def export_csv(staged: Staged, out: Path, *extra: str) -> Path:
    done = staged.haul("export", "--config", staged.config, "--out", out, *extra)
    assert done.returncode == 0, done.stderr
    return (out / "latest").resolve()


def rows(folder: Path, table: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{table}.csv", dtype=str, keep_default_na=False)


def test_since_last_exports_only_what_the_next_extract_changed(staged: Staged) -> None:
    """After a full export, a change at the source and an incremental extract, `--since last`
    writes a second folder holding the changed issue and the new comment alone; with nothing
    changed since, the third holds headers only. `--keep 2` then leaves the newest two."""
    out = staged.directory / "nightly"
    first = export_csv(staged, out)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", first.name)
    key = rows(first, "issues")["key"].iloc[0]
    asyncio.run(change_the_source(staged.info, key))
    extracted = staged.haul("extract", "--config", staged.config)
    assert extracted.returncode == 0, extracted.stderr

    second = export_csv(staged, out, "--since", "last")

    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{6}", second.name)  # the same day: its time added
    issues = rows(second, "issues")
    assert issues[["key", "summary"]].values.tolist() == [[key, "Renamed overnight"]]
    comments = rows(second, "comments")
    assert comments[["issue_key", "text"]].values.tolist() == [[key, "late note"]]
    # records that carry the issue's summary (worklogs, changelog entries) changed with it
    for table in ("worklogs", "changelog", "links", "attachments", "checklist_items"):
        assert set(rows(second, table)["issue_key"]) <= {key}, table
    assert "Renamed overnight" in rows(second, "changelog")["changes"].str.cat()
    for table in ("users", "statuses", "queues"):
        assert rows(second, table).empty, table
    manifest = json.loads((second / "manifest.json").read_text())
    previous = json.loads((first / "manifest.json").read_text())
    assert manifest["since"] == previous["watermark"] and manifest["since_inclusive"] is False
    assert manifest["watermark"] > previous["watermark"]

    third = export_csv(staged, out, "--since", "last", "--keep", "2")

    assert all(
        entry["rows"] == 0 for entry in json.loads((third / "manifest.json").read_text())["files"]
    )
    kept = sorted(path.name for path in out.iterdir() if not path.name.startswith("."))
    assert kept == sorted([second.name, third.name, "latest"])
    assert (out / "latest").resolve() == third


@pytest.mark.slow  # --since last, above, is the default run's incremental export
def test_since_a_date_keeps_what_was_staged_from_then(staged: Staged) -> None:
    """--since DATE: a date after the extract exports no rows; an instant before it (in any
    zone), every row."""
    later = export_csv(staged, staged.directory / "later", "--since", "2999-01-01")
    assert rows(later, "issues").empty
    since = "2000-01-01T03:00:00+03:00"
    earlier = export_csv(staged, staged.directory / "earlier", "--since", since)
    expected = expected_rows(staged.store_path)
    assert {table: len(rows(earlier, table)) for table in expected} == expected
