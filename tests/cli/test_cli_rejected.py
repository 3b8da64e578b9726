"""A record the target rejects: `haul run` exits 1, `haul failures` lists it with the target's
error, `haul status` counts it as failed, and every other record is loaded. Fixing the cause
and running `haul load --retry-failed` then loads it too.

The target is made to lack a user: the users CSV maps one source login to a login the target
does not have, so every record that names that user gets 422 from the import.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import (
    count_issues,
    counts_table,
    run_haul,
    source_get,
    source_issues,
    source_post,
    source_queues,
    tokens_env,
    user_refs,
    write_config,
)

GHOST = "ghost-login"
TARGET_QUEUE = {"TEST": "NEW"}  # write_config's default queue mapping
FAILURE_LINE = re.compile(r"^(?P<entity>\w+) (?P<source_id>\S+) \(attempts \d+\): (?P<error>.+)$")


def rarest_user(info: dict[str, Any], issues: list[dict], comments: list[dict]) -> tuple[str, str]:
    """The login named by the fewest issues, then the fewest comments (but by
    something): mapping it away fails as few records as possible, ideally one comment.
    Returns (uid, login)."""
    logins = {str(user["uid"]): user["login"] for user in source_get(info, "/users")["users"]}
    in_issues = Counter(uid for issue in issues for uid in user_refs(issue))
    in_comments = Counter(uid for comment in comments for uid in user_refs(comment))
    named = set(in_issues) | set(in_comments)
    uid = min(named, key=lambda uid: (in_issues[uid], in_comments[uid], logins[uid]))
    return uid, logins[uid]


def link_ends(info: dict[str, Any], source_id: str) -> set[str]:
    """The source keys of both ends of the staged link `source_id` ("<issue key>/<link id>")."""
    issue, link_id = source_id.split("/")
    links = source_get(info, f"/issues/{issue}/links")
    other = next(link["object"]["key"] for link in links if str(link["id"]) == link_id)
    return {issue, other}


def causes(output: str) -> list[str]:
    """The causes `haul failures` leads with, commonest first, without their "cause: "."""
    return [
        line.removeprefix("cause: ") for line in output.splitlines() if line.startswith("cause: ")
    ]


def failures(output: str) -> list[dict[str, str]]:
    """The records `haul failures` lists, as {"entity", "source_id", "error"}.

    A line that does not start a record continues the one before: rich wraps long lines.
    The causes the listing leads with ("cause: ...") are left out (see `causes`).
    """
    *lines, summary = (line for line in output.splitlines() if not line.startswith("cause: "))
    assert summary.endswith("fix the cause, then: haul load --retry-failed"), output
    records: list[str] = []
    for line in lines:
        if FAILURE_LINE.match(line) or not records:
            records.append(line)
        else:
            records[-1] += line
    found = [FAILURE_LINE.match(record) for record in records]
    assert all(found), output
    return [match.groupdict() for match in found if match]


def source_records(info: dict[str, Any], queues: list[str]) -> tuple[list[dict], list[dict]]:
    """The source's issues, and their comments each with the key of its "issue"."""
    issues = [issue for queue in queues for issue in source_issues(info, queue)]
    comments = [
        {**comment, "issue": issue["key"]}
        for issue in issues
        for comment in source_get(info, f"/issues/{issue['key']}/comments", perPage=100)
    ]
    return issues, comments


def plant_linked_issue(info: dict[str, Any], queue: str, login: str) -> str:
    """A source issue assigned to `login`, linked to the queue's first issue: whatever the
    seed, the run has a rejected issue with a link (whose load must fail as not loaded)."""
    other = source_issues(info, queue)[0]["key"]
    body = {"queue": queue, "summary": "Assigned to the user the target lacks", "assignee": login}
    key = str(source_post(info, "/issues", body)["key"])
    source_post(info, f"/issues/{key}/links", {"relationship": "relates", "issue": other})
    return key


@dataclass
class RejectedRun:
    """A `haul run` in which the target rejected the records naming the user `victim_uid`."""

    info: dict[str, Any]
    queues: list[str]
    issues: list[dict[str, Any]]
    comments: list[dict[str, Any]]  # each with the key of its "issue"
    victim_uid: str
    users_csv: Path
    config: Path
    env: dict[str, str]
    run: subprocess.CompletedProcess[str]
    listed: list[dict[str, str]]
    planted: str  # the key of an issue naming the victim, with a link


@pytest.fixture(scope="module")
def rejected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RejectedRun]:
    """A tiny org migrated with its rarest user mapped to a login the target lacks."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        queues = source_queues(info)
        victim_uid, victim = rarest_user(info, *source_records(info, queues))
        planted = plant_linked_issue(info, queues[0], victim)
        issues, comments = source_records(info, queues)
        directory = tmp_path_factory.mktemp("rejected")
        users_csv = directory / "users.csv"
        users_csv.write_text(f"source,target\n{victim},{GHOST}\n", encoding="utf-8")
        config = write_config(directory, info, queues=queues, users_file=users_csv)
        env = tokens_env(info["tokens"]["admin"])
        run = run_haul("run", "--config", config, env=env)
        listing = run_haul("failures", "--config", config, "--limit", "1000", env=env)
        assert listing.returncode == 0, listing.stderr
        yield RejectedRun(
            info,
            queues,
            issues,
            comments,
            victim_uid,
            users_csv,
            config,
            env,
            run,
            failures(listing.stdout),
            planted,
        )


def test_run_exits_3_and_points_to_haul_failures(rejected: RejectedRun) -> None:
    """Records failed: exit 3 (done, but records failed), and stderr says how many and where
    to look."""
    assert rejected.run.returncode == 3, rejected.run.stderr
    assert rejected.listed, "nothing failed, so these tests prove nothing"
    last = rejected.run.stderr.splitlines()[-1]
    assert last.startswith(f"haul: {len(rejected.listed)} record(s) failed; the commonest cause")
    assert f"User '{GHOST}' does not exist" in last
    assert last.endswith("; see haul failures")


def test_failures_lead_with_the_cause_and_count_the_records_waiting_under_it(
    rejected: RejectedRun,
) -> None:
    """The listing starts with its causes, grouped by reason: the missing user first, with
    the records failed only because their issue was not loaded counted under it, not listed
    as causes; then the records, roots of the commonest cause first."""
    listing = run_haul("failures", "--config", rejected.config, "--limit", "1000", env=rejected.env)
    lines = listing.stdout.splitlines()
    found = causes(listing.stdout)
    assert found and lines[: len(found)] == [f"cause: {cause}" for cause in found]
    assert f"User '{GHOST}' does not exist" in found[0]
    assert not any("was not loaded" in cause for cause in found)
    waiting = [f for f in rejected.listed if "was not loaded" in f["error"]]
    counted = sum(
        int(m[1]) for cause in found if (m := re.search(r"; (\d+) record\(s\) waiting", cause))
    )
    assert counted == len(waiting)
    assert "was not loaded" not in lines[len(found)]
    report = json.loads((rejected.config.parent / "staging" / "report.json").read_text("utf-8"))
    reasons = report["failures_by_reason"]
    assert f"User '{GHOST}' does not exist" in reasons[0]["reason"]
    assert not any("was not loaded" in cause["reason"] for cause in reasons)
    assert sum(cause["waiting"] for cause in reasons) == len(waiting)
    assert sum(int(cause.split()[0]) for cause in found) + counted == len(rejected.listed)


def test_failures_lists_each_rejected_record_with_the_targets_error(
    rejected: RejectedRun,
) -> None:
    """Each failure is the target's 422 naming the missing user, or a record that depends on
    a rejected one; exactly the issues naming the user failed, and every comment by them."""
    failed_issues = {f["source_id"] for f in rejected.listed if f["entity"] == "issue"}
    for failure in rejected.listed:
        error = failure["error"]
        if "-> 422" in error:
            assert f"User '{GHOST}' does not exist" in error or "followers" in error, failure
        elif failure["entity"] == "link" and "-> 404" in error:
            assert link_ends(rejected.info, failure["source_id"]) & failed_issues, failure
        else:
            assert "was not loaded" in error, failure
    naming_victim = {i["key"] for i in rejected.issues if rejected.victim_uid in user_refs(i)}
    assert failed_issues == naming_victim
    failed_ids = {failure["source_id"] for failure in rejected.listed}
    for comment in rejected.comments:
        if rejected.victim_uid in user_refs(comment):
            assert f"{comment['issue']}/{comment['id']}" in failed_ids


def test_a_link_of_a_rejected_issue_fails_as_not_loaded(rejected: RejectedRun) -> None:
    """A link with a rejected end is failed without a request, saying which end is missing
    (a link the target rejected for itself, e.g. made by the unknown user, keeps its 422)."""
    failed_issues = {f["source_id"] for f in rejected.listed if f["entity"] == "issue"}
    links = [
        f
        for f in rejected.listed
        if f["entity"] == "link" and f["source_id"].split("/")[0] in failed_issues
    ]
    assert rejected.planted in failed_issues
    assert any(f["source_id"].startswith(f"{rejected.planted}/") for f in links), rejected.listed
    for failure in links:
        assert "was not loaded" in failure["error"], failure


def test_status_counts_the_failures_and_everything_else_is_loaded(rejected: RejectedRun) -> None:
    """Per entity: failed as listed, nothing pending, loaded + failed == staged."""
    status = run_haul("status", "--config", rejected.config, env=rejected.env)
    assert status.returncode == 0, status.stderr
    table = counts_table(status.stdout)
    listed = Counter(failure["entity"] for failure in rejected.listed)
    for entity, row in table.items():
        if row["loaded"] == "-":
            continue  # staged only (changelog)
        assert row["pending"] == 0, entity
        assert row["loaded"] + row["failed"] == row["to load"], entity
        expected = len(rejected.listed) if entity == "total" else listed[entity]
        assert row["failed"] == expected, entity
    failed_issues = listed["issue"]
    assert table["issue"]["loaded"] == len(rejected.issues) - failed_issues


def test_failures_prints_one_line_per_record_when_piped(rejected: RejectedRun) -> None:
    """Piped with no COLUMNS set (as in `haul failures ... > file`), each record stays on one
    line, so the listing can be grepped."""
    env = {name: value for name, value in rejected.env.items() if name != "COLUMNS"}
    done = run_haul("failures", "--config", rejected.config, "--limit", "1000", env=env)
    assert done.returncode == 0, done.stderr
    lines = len(rejected.listed) + len(causes(done.stdout)) + 1
    assert len(done.stdout.splitlines()) == lines


def test_retry_after_the_fix_loads_the_failed_records_once(rejected: RejectedRun) -> None:
    """Last (it changes the target): with the mapping fixed, `haul load --retry-failed` loads
    every failed record and exits 0; the target then holds each issue once."""
    rejected.users_csv.write_text("source,target\n", encoding="utf-8")

    retry = run_haul("load", "--config", rejected.config, "--retry-failed", env=rejected.env)

    assert retry.returncode == 0, retry.stderr
    table = counts_table(retry.stdout)
    assert table["total"]["loaded"] == table["total"]["to load"] > 0
    assert table["total"]["failed"] == table["total"]["pending"] == 0
    assert f"{len(rejected.listed)} loaded, 0 failed" in retry.stdout
    target_queues = [TARGET_QUEUE.get(queue, queue) for queue in rejected.queues]
    in_target = sum(count_issues(rejected.info, "target", queue) for queue in target_queues)
    assert in_target == len(rejected.issues)
