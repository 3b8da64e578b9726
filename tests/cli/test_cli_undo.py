"""`haul undo`: a migration taken back from the ledger, as a user runs it over the sandbox.

After a full `haul run` of the small sandbox org (tracker, wiki, planning layer), undo leaves
the target's comments, worklogs, files, links, checklists, pages and planning objects as they
were before the migration, read through the plain API; it keeps and names what the API cannot
delete (issues, a dashboard, the components and boards that issues which stay still name) and
what it did not write (a comment added by hand after the run, a filter made before it). Then
`haul verify` reports each record taken back as missing, and nothing else.
"""

from __future__ import annotations

import csv
import os
import pty
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.state.ledger import UNDONE
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import HAUL, haul_env, run_haul, wait_for
from tests.helpers.haul_fixtures import TOKEN_ENV, source_queues, write_config, writes
from tests.helpers.sandbox_clients import client_for
from tests.helpers.target_records import target_records

SCOPE = {"entities": "all", "filters": "all", "dashboards": "all"}
# what undo keeps: the API deletes no issue and no dashboard; components, versions and boards
# (with their columns) that issues which stay name are kept with them
KEPT_KINDS = {"issue", "dashboards", "components", "versions", "boards", "board_column"}


@dataclass(frozen=True)
class Migrated:
    """A sandbox whose small org was migrated, the config, and the target's records as they
    were before the run."""

    sandbox: RunningSandbox
    config: Path
    before: dict[str, set[str]]

    def haul(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """`haul ARGS --config ...` to its end, with the sandbox's token."""
        return run_haul(*args, "--config", self.config, env=self.env, **options)

    @property
    def env(self) -> dict[str, str]:
        return haul_env({TOKEN_ENV: self.sandbox.info["tokens"]["admin"]})

    def records(self) -> dict[str, set[str]]:
        return target_records(self.sandbox, roots(self.sandbox))


@pytest.fixture
def migrated(tmp_path: Path) -> Iterator[Migrated]:
    """The target holds one filter made by hand, then the whole small org is migrated."""
    with start_sandbox(size="tiny", seed=5) as sandbox:
        with client_for(sandbox, "target") as tracker:
            made = tracker.post("/filters", json={"name": "by hand", "query": "Queue: NEW"})
            assert made.status_code in (200, 201), made.text
        info = sandbox.info
        config = write_config(tmp_path, info, queues=source_queues(info),
                              services=("tracker", "wiki"), scope=SCOPE)  # fmt: skip
        state = Migrated(sandbox, config, target_records(sandbox, roots(sandbox)))
        ran = state.haul("run")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        yield state


def roots(sandbox: RunningSandbox) -> list[str]:
    return list(sandbox.info["wiki_roots"]["source"])


def deletes(sandbox: RunningSandbox) -> int:
    """DELETE requests the sandbox has served so far."""
    return sum(n for route, n in writes(sandbox.stats()).items() if route.startswith("DELETE"))


def undone_rows(config: Path) -> set[tuple[str, str]]:
    with StagingStore.open(config.parent / "haul.db") as store:
        return {
            (row.entity, row.source_id)
            for row in store.ledger.iter_rows(status="done")
            if row.undo in UNDONE
        }


def test_undo_after_a_full_run_leaves_the_target_as_it_was(
    migrated: Migrated,
) -> None:
    """Everything the API deletes is gone, nothing else: a comment added by hand after the
    run and a filter made before it stay; each issue is listed with how to archive it; a
    page's recovery token is printed; verify reports every undone record missing, nothing
    else; a second undo deletes nothing."""
    sandbox, config, before = migrated.sandbox, migrated.config, migrated.before
    with client_for(sandbox, "target") as tracker:
        added = tracker.post("/issues/NEW-1/comments", json={"text": "said by hand"})
        assert added.status_code == 201, added.text
    by_hand = f"NEW-1/{added.json()['id']}"

    done = migrated.haul("undo", "--yes")

    assert done.returncode == 0, done.stdout + done.stderr
    after = migrated.records()
    for kind in (set(before) | set(after)) - KEPT_KINDS:
        expected = before.get(kind, set()) | ({by_hand} if kind == "comment" else set())
        assert after.get(kind, set()) == expected, kind
    assert after["comment"] == {by_hand} and not after.get("wiki_page")
    issues = after["issue"]
    assert len(issues) == 50
    for key in issues:
        assert f"(target {key})" in done.stdout
    assert "kept 50 issue: the tracker's API deletes no issue: close it" in done.stdout
    assert "recovery token: wiki_page team/handbook (target" in done.stdout

    verified = migrated.haul("verify")
    assert verified.returncode == 3, verified.stdout + verified.stderr
    with open(config.parent / "verify.csv", encoding="utf-8") as handle:
        differences = list(csv.DictReader(handle))
    extra = [d for d in differences if d["kind"] == "added in the target"]  # made by hand
    assert [(d["entity"], d["target_id"]) for d in extra] == [("comment", by_hand)]
    missing = [d for d in differences if d not in extra]
    assert {d["kind"] for d in missing} == {"record"}
    undone = undone_rows(config)
    assert {(d["entity"], d["source_id"]) for d in missing} == undone
    assert {"comment", "wiki_page", "goal", "filter", "checklist"} <= {e for e, _ in undone}
    # a text written again is an edit: gone with its comment, kept with its issue (kept)
    edited = {source_id for entity, source_id in undone if entity == "comment_references"}
    assert edited and edited <= {source_id for entity, source_id in undone if entity == "comment"}
    status = migrated.haul("status")
    comments = sum(entity == "comment" for entity, _ in undone)
    assert f"undone: comment: {comments} loaded, then taken out of the target" in status.stdout
    assert not any(entity == "issue_references" for entity, _ in undone)
    assert f"went with their parent: comment_references {len(edited)}," in done.stdout
    assert "kept with their issue, which stays: issue_references" in done.stdout

    sent = deletes(sandbox)
    again = migrated.haul("undo", "--yes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert deletes(sandbox) == sent
    assert f"already taken back by an earlier undo: {len(undone)}" in again.stdout


def test_a_dry_run_or_a_declined_confirmation_deletes_nothing(
    migrated: Migrated,
) -> None:
    """--dry-run lists what undo would delete and keep; off a terminal without --yes it is a
    usage error (exit 2); on a terminal, answering no stops before any deletion (exit 1)."""
    sandbox, config = migrated.sandbox, migrated.config

    dry = migrated.haul("undo", "--dry-run")
    refused = migrated.haul("undo", stdin=subprocess.DEVNULL)
    declined = answer_on_a_terminal(migrated, "n\n")

    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "haul undo --dry-run: what it would do" in dry.stdout
    assert "kept: issue TEST-1 (target NEW-1)" in dry.stdout
    assert refused.returncode == 2
    assert "off a terminal, pass --yes" in refused.stderr
    assert declined.returncode == 1, declined.stdout
    assert "Delete " in declined.stdout and "nothing was deleted" in declined.stdout
    assert deletes(sandbox) == 0
    assert undone_rows(config) == set()


def answer_on_a_terminal(migrated: Migrated, answer: str) -> subprocess.CompletedProcess[str]:
    """`haul undo` with a pseudo-terminal as its stdin, `answer` typed into it."""
    leader, follower = pty.openpty()
    try:
        os.write(leader, answer.encode())
        return subprocess.run(
            [str(HAUL), "undo", "--config", str(migrated.config)],
            env=migrated.env,
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(follower)
        os.close(leader)


def test_undo_off_a_terminal_needs_yes_before_anything_is_read(tmp_path: Path) -> None:
    """The refusal comes first: no config is read, nothing is touched."""
    done = run_haul("undo", "--config", tmp_path / "absent.toml", stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "pass --yes" in done.stderr


def test_a_signal_stops_undo_between_two_deletions(migrated: Migrated) -> None:
    """SIGTERM mid-undo: the deletion under way ends and is recorded, none is left in flight,
    exit 1 says to run it again; the next run takes back the rest."""
    db = migrated.config.parent / "haul.db"
    process = subprocess.Popen(
        [str(HAUL), "undo", "--yes", "--config", str(migrated.config)],
        env=migrated.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: len(undone_rows(migrated.config)) >= 20, 60, "20 records undone")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    with StagingStore.open(db) as store:
        in_flight = [r for r in store.ledger.iter_rows(status="done") if r.undo == "in_flight"]
    stopped_at = undone_rows(migrated.config)

    rest = migrated.haul("undo", "--yes")

    assert process.returncode == 1, stderr
    assert "run the same command to resume" in stderr
    assert in_flight == []
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert stopped_at < undone_rows(migrated.config)
    assert f"already taken back by an earlier undo: {len(stopped_at)}" in rest.stdout


def test_undo_without_a_staging_store_says_there_is_nothing_to_undo(tmp_path: Path) -> None:
    """No store (wrong config, or nothing ever loaded): exit 1, naming the path; none made."""
    with start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        config = write_config(tmp_path, info, queues=source_queues(info))
        env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
        done = run_haul("undo", "--yes", "--config", config, env=env)
    assert done.returncode == 1
    assert "nothing to undo" in done.stderr and "haul.db does not exist" in done.stderr
    assert not (tmp_path / "haul.db").exists()
