"""`haul verify` through the CLI: a clean migration matches; edits planted in the target are named."""

from __future__ import annotations

import asyncio
import csv
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from haul.connectors.wiki import WikiClient
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.trust_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    loaded_rows,
    migrated,
    run_haul,
    staging_db,
    target_call,
    tokens_env,
)


@pytest.mark.slow  # the report's browser test and the wiki test also verify a clean run
def test_verify_passes_after_a_clean_migration(sandbox: Any, tmp_path: Path) -> None:
    config, env = migrated(tmp_path, sandbox.info)

    done = run_haul("verify", "--config", config, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "the target matches" in done.stdout
    assert "differs:" not in done.stdout


def test_verify_names_each_planted_difference(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config, env = migrated(tmp_path, info)
    comment = loaded_rows(tmp_path, "comment")[0]
    worklog = loaded_rows(tmp_path, "worklog")[0]
    attachment = loaded_rows(tmp_path, "attachment")[0]
    issue = loaded_rows(tmp_path, "issue")[0]
    target_call(
        info, "PATCH", f"/issues/{comment[2]}/comments/{comment[1]}", json={"text": "edited"}
    )
    target_call(info, "DELETE", f"/issues/{worklog[2]}/worklog/{worklog[1]}")
    size = len(
        target_call(info, "GET", f"/issues/{attachment[2]}/attachments/{attachment[1]}/x").content
    )
    target_call(
        info, "PUT", f"/_sandbox/attachments/{attachment[2]}/{attachment[1]}", content=b"z" * size
    )
    status = target_call(info, "GET", f"/issues/{issue[2]}").json()["status"]["key"]
    other = next(
        s["key"] for s in target_call(info, "GET", "/statuses").json() if s["key"] != status
    )
    target_call(info, "POST", f"/issues/{issue[2]}/transitions/{other}/_execute")
    # and records added by hand under two migrated issues: differences of their own kind
    first, second = comment[2], worklog[2]
    target_call(info, "POST", f"/issues/{first}/comments", json={"text": "added by hand"})
    created = target_call(info, "GET", f"/issues/{second}").json()["createdAt"]
    worklog_by_hand = {"start": created, "duration": "PT1H", "createdAt": created}
    target_call(info, "POST", f"/issues/{second}/worklogs/_import",
                json={**worklog_by_hand, "createdBy": "robot"})  # fmt: skip
    report = tmp_path / "differences.csv"

    done = run_haul("verify", "--config", config, "--csv", report, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    with report.open(encoding="utf-8") as handle:
        rows = {(r["entity"], r["source_id"], r["field"]): r for r in csv.DictReader(handle)}
    assert rows[("comment", comment[0], "text")]["target"] == "edited"
    assert rows[("worklog", worklog[0], "record")]["target"] == "(missing in target)"
    assert ("attachment", attachment[0], "sha256") in rows
    assert ("attachment", attachment[0], "size") not in rows
    assert ("issue", issue[0], "status") in rows
    # and under the issue's status record: the status the load carried
    assert any(r[:1] == ("issue_status",) and r[1].startswith(f"{issue[0]}/") for r in rows)
    # a worklog removed by hand also moves its issue's time spent, which verify compares too
    spent = ("issue", worklog[0].rpartition("/")[0], "spent")
    assert spent in rows
    extras = {entity: rows[(entity, "", "extra record")] for entity in ("comment", "worklog")}
    assert extras["comment"]["target_id"].split("/")[0] == first
    assert extras["worklog"]["target_id"].split("/")[0] == second
    assert all(row["source"] == "(not in the source)" for row in extras.values())
    assert len(rows) == 8, sorted(rows)
    for entity, source_id, field in rows:
        assert f"differs: {entity} {source_id} " in done.stdout and field in done.stdout


@pytest.mark.slow  # one of several full runs of its kind; make test-all runs it
def test_verify_sample_checks_n_records_per_entity(sandbox: Any, tmp_path: Path) -> None:
    config, env = migrated(tmp_path, sandbox.info)

    done = run_haul(
        "verify", "--config", config, "--sample", "3", "--entities", "issue,comment", env=env
    )

    assert done.returncode == 0, done.stdout + done.stderr
    lines = {
        line.split("│")[1].strip(): line
        for line in done.stdout.splitlines()
        if line.count("│") == 7
    }
    assert set(lines) == {"issue", "comment"}
    assert all(line.split("│")[4].strip() == "3" for line in lines.values())


def _backfill_config(directory: Path, info: dict[str, Any]) -> Path:
    """A migration of the runbooks page with two surveys back-filled: support answers into
    issues of NEW, feedback into a grid on the page."""
    support, _, feedback = info["surveys"]["source"]
    rules = (
        f'\n[[backfill]]\nsurvey = "{support}"\ninto = "tracker"\nqueue = "NEW"\n'
        'summary = "{subject} ({email})"\nfields = { priority = "{urgency}" }\n'
        'created_by = "{email}"\nvalues = { priority = { low = "minor", high = "critical" } }\n'
        f'\n[[backfill]]\nsurvey = "{feedback}"\ninto = "wiki_grid"\npage = "team/runbooks"\n'
        'title = "Feedback"\n'
    )
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        queues=[],
        services=("forms", "tracker", "wiki"),
        wiki_roots=["team/runbooks"],
        surveys=[support, feedback],
        staging_path="staging/haul.db",
        sections=rules,
    )
    return write_sandbox_config(directory, info, options)


def _change_first_cell(info: dict[str, Any], grid_id: str, slug: str, value: Any) -> None:
    async def change() -> None:
        async with WikiClient.connect(
            base_url=info["wiki"], token=info["tokens"]["admin"], org_id=info["orgs"]["target"]
        ) as wiki:
            grid = await wiki.get_grid(grid_id)
            row = grid["rows"][0]["id"]
            await wiki.update_cells(
                grid_id,
                str(grid["revision"]),
                [{"row_id": row, "column_slug": slug, "value": value}],
            )

    asyncio.run(change())


def test_verify_compares_back_fills_and_names_one_changed_cell(
    sandbox: Any, tmp_path: Path
) -> None:
    """Back-filled issues, their files, grids and grid rows are compared, not skipped; one
    cell changed by hand is one 'cell' difference (not the grid twice); a back-filled issue's
    edited summary is named."""
    info = sandbox.info
    config = _backfill_config(tmp_path, info)
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("run", "--config", config, env=env).returncode == 0
    clean = run_haul("verify", "--config", config, env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    for entity in ("backfill_issue", "backfill_attachment", "backfill_grid", "backfill_grid_rows"):
        assert f"{entity} (not compared)" not in clean.stdout
        assert f"│ {entity} " in clean.stdout, clean.stdout
    with sqlite3.connect(staging_db(tmp_path)) as db:
        grid = db.execute(
            "SELECT target_id FROM ledger WHERE entity = 'backfill_grid_rows'"
        ).fetchone()[0]
        issue = db.execute(
            "SELECT source_id, target_id FROM ledger WHERE entity = 'backfill_issue'"
            " AND status = 'done' ORDER BY source_id"
        ).fetchone()
    _change_first_cell(info, grid, "comment", "changed by hand")
    target_call(info, "PATCH", f"/issues/{issue[1]}", json={"summary": "edited by hand"})
    report = tmp_path / "differences.csv"

    done = run_haul("verify", "--config", config, "--csv", report, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    with report.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    cells = [row for row in rows if row["entity"] == "backfill_grid_rows"]
    assert [(row["field"], row["target"], row["kind"]) for row in cells] == [
        ("cell row 1, column comment", "changed by hand", "cell")
    ]
    summary = [row for row in rows if row["entity"] == "backfill_issue"]
    assert [(row["source_id"], row["field"], row["target"]) for row in summary] == [
        (issue[0], "summary", "edited by hand")
    ]
    assert "differences by kind: cell 1, field 1" in done.stdout
