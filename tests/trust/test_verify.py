"""`haul verify` through the CLI: a clean migration matches; edits planted in the target are named."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from trust_fixtures import loaded_rows, migrated, run_haul, target_call


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
    # a worklog removed by hand also moves its issue's time spent, which verify compares too
    spent = ("issue", worklog[0].rpartition("/")[0], "spent")
    assert spent in rows
    assert len(rows) == 5, sorted(rows)
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


def test_verify_names_records_added_by_hand_under_migrated_issues(
    sandbox: Any, tmp_path: Path
) -> None:
    """A comment and a worklog added by hand under two migrated issues are differences of
    their own kind ("extra record"), each naming its issue: verify exits 3."""
    info = sandbox.info
    config, env = migrated(tmp_path, info)
    first, second = (row[2] for row in loaded_rows(tmp_path, "issue")[:2])
    target_call(info, "POST", f"/issues/{first}/comments", json={"text": "added by hand"})
    worklog = {
        "start": "2024-01-02T10:00:00.000+0000",
        "duration": "PT1H",
        "createdAt": "2024-01-02T11:00:00.000+0000",
        "createdBy": "robot",
    }
    issue = target_call(info, "GET", f"/issues/{second}").json()
    worklog["createdAt"] = worklog["start"] = issue["createdAt"]
    target_call(info, "POST", f"/issues/{second}/worklogs/_import", json=worklog)
    report = tmp_path / "differences.csv"

    done = run_haul("verify", "--config", config, "--csv", report, env=env)

    assert done.returncode == 3, done.stdout + done.stderr
    with report.open(encoding="utf-8") as handle:
        extras = [r for r in csv.DictReader(handle) if r["field"] == "extra record"]
    assert sorted((r["entity"], r["target_id"].split("/")[0]) for r in extras) == [
        ("comment", first),
        ("worklog", second),
    ]
    assert all(r["source"] == "(not in the source)" for r in extras)
