"""Every command that deletes touches only what haul wrote and nobody changed since.

One small org (tracker and wiki) is migrated with `[sync] deletions = "mirror"`; then a person
works in the target: edits an item of a checklist haul wrote and adds one, edits two comments
and a worklog, and rewrites two pages haul made. At the source, one of those comments and one of those pages
are deleted, and the next run would mirror the deletions. The base decides: the mirrored
deletions and `haul undo` keep each record a person changed, and name it; `haul undo
--include-changed` deletes them; an item a person added stays. A gateway answering each DELETE
with its HTML sign-in page stops undo, the rows still loaded. The tests share one migration and
run in this file's order (each also holds on a fresh one).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.state.ledger import LedgerRow
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import TOKEN_ENV, source_queues, write_config
from tests.helpers.sandbox_clients import client_for, wiki_for
from tests.helpers.sync_changes import MIRROR

EDITED = "Edited by a person after the migration."


@dataclass(frozen=True)
class Worked:
    """The migrated org after a person's work, and the run that would mirror deletions."""

    sandbox: RunningSandbox
    config: Path
    checklist: str  # the target issue whose checklist a person changed
    edited_item: str  # the target id of the item a person edited
    added_item: str  # the target id of the item a person added
    comments: dict[str, tuple[str, str]]  # "undo" / "mirror" -> (target issue, comment id)
    worklog: tuple[str, str]  # (target issue, worklog id) a person edited
    pages: dict[str, int]  # "undo" / "mirror" -> target page id
    synced: subprocess.CompletedProcess[str]

    def haul(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = haul_env({TOKEN_ENV: self.sandbox.info["tokens"]["admin"]})
        return run_haul(*args, "--config", self.config, env=env)

    def tracker(self) -> httpx.Client:
        return client_for(self.sandbox, "target")

    def wiki(self) -> httpx.Client:
        return wiki_for(self.sandbox, "target")

    def comment_text(self, which: str) -> str | None:
        key, comment_id = self.comments[which]
        with self.tracker() as tracker:
            listed = tracker.get(f"/issues/{key}/comments")
        held = {str(c["id"]): c["text"] for c in listed.json()} if listed.is_success else {}
        return held.get(comment_id)

    def worklog_held(self) -> bool:
        key, worklog_id = self.worklog
        with self.tracker() as tracker:
            return tracker.get(f"/issues/{key}/worklog/{worklog_id}").status_code == 200

    def page_content(self, which: str) -> str | None:
        with self.wiki() as wiki:
            found = wiki.get(f"/pages/{self.pages[which]}", params={"fields": "content"})
        return str(found.json()["content"]) if found.status_code == 200 else None

    def checklist_items(self) -> dict[str, str]:
        with self.tracker() as tracker:
            listed = tracker.get(f"/issues/{self.checklist}/checklistItems")
        assert listed.status_code == 200, listed.text
        return {str(item["id"]): item["text"] for item in listed.json()}

    def rows(self) -> list[LedgerRow]:
        with StagingStore.open(self.config.parent / "haul.db") as store:
            return list(store.ledger.iter_rows(status="done"))


@pytest.fixture(scope="module")
def worked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worked]:
    directory = tmp_path_factory.mktemp("undo_changed")
    with start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        roots = sorted(info["wiki_roots"]["source"])[:1]  # one queue, one tree: a small org
        config = write_config(directory, info, queues=source_queues(info)[:1], wiki_roots=roots,
                              services=("tracker", "wiki"), extra=MIRROR)  # fmt: skip
        env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
        ran = run_haul("run", "--config", config, env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        with StagingStore.open(directory / "haul.db") as store:
            rows = list(store.ledger.iter_rows(status="done"))
            issues = {r.source_id: r.target_id for r in rows if r.entity == "issue"}
        checklist, edited_item, added_item = _change_a_checklist(sandbox, rows)
        comments = _edit_two_comments(sandbox, rows, issues)
        worklog = _edit_a_worklog(sandbox, rows, issues)
        pages = _rewrite_two_pages(sandbox, rows)
        _delete_at_the_source(sandbox, comments["mirror"], pages["mirror"])
        synced = run_haul("run", "--config", config, env=env)
        held = {k: (issues[r.parent or ""] or "", r.target_id or "") for k, r in comments.items()}
        page_ids = {k: int(r.target_id or 0) for k, r in pages.items()}
        yield Worked(sandbox, config, checklist, edited_item, added_item, held, worklog, page_ids,
                     synced)  # fmt: skip


def _change_a_checklist(sandbox: RunningSandbox, rows: list[LedgerRow]) -> tuple[str, str, str]:
    """In the target, one item of a checklist haul wrote edited, one item added."""
    with client_for(sandbox, "target") as tracker:
        for row in rows:
            if row.entity != "checklist" or row.found:
                continue
            key = (row.target_id or "").split("/")[0]
            items = tracker.get(f"/issues/{key}/checklistItems").json()
            if len(items) >= 2:
                break
        else:
            raise AssertionError("no checklist of two items was loaded")
        edited = str(items[0]["id"])
        patched = tracker.patch(f"/issues/{key}/checklistItems/{edited}", json={"text": EDITED})
        assert patched.status_code == 200, patched.text
        added = tracker.post(f"/issues/{key}/checklistItems", json=[{"text": "Added by hand"}])
        assert added.status_code in (200, 201), added.text
        listed = tracker.get(f"/issues/{key}/checklistItems").json()
    (new,) = [str(item["id"]) for item in listed if item["text"] == "Added by hand"]
    return key, edited, new


def _edit_two_comments(
    sandbox: RunningSandbox, rows: list[LedgerRow], issues: dict[str, str | None]
) -> dict[str, LedgerRow]:
    """Two comments haul wrote, on two issues, edited in the target."""
    texts = {r.source_id for r in rows if r.entity == "comment_references"}  # a second write
    plain = [r for r in rows if r.entity == "comment" and not r.found and r.source_id not in texts]
    first = plain[0]
    other = next(r for r in plain if r.parent != first.parent)
    picked = {"undo": first, "mirror": other}
    with client_for(sandbox, "target") as tracker:
        for row in picked.values():
            path = f"/issues/{issues[row.parent or '']}/comments/{row.target_id}"
            patched = tracker.patch(path, json={"text": EDITED})
            assert patched.status_code == 200, patched.text
    return picked


def _edit_a_worklog(
    sandbox: RunningSandbox, rows: list[LedgerRow], issues: dict[str, str | None]
) -> tuple[str, str]:
    """A worklog haul wrote, its note edited in the target."""
    row = next(r for r in rows if r.entity == "worklog" and not r.found)
    key, worklog_id = issues[row.parent or ""] or "", row.target_id or ""
    with client_for(sandbox, "target") as tracker:
        patched = tracker.patch(f"/issues/{key}/worklog/{worklog_id}", json={"comment": EDITED})
        assert patched.status_code == 200, patched.text
    return key, worklog_id


def _rewrite_two_pages(sandbox: RunningSandbox, rows: list[LedgerRow]) -> dict[str, LedgerRow]:
    """Two leaf pages haul made, rewritten in the target."""
    slugs = {r.source_id for r in rows if r.entity == "wiki_page"}
    leaves = [
        r
        for r in rows
        if r.entity == "wiki_page"
        and not r.found
        and not any(s.startswith(r.source_id + "/") for s in slugs)
    ]
    picked = {"undo": leaves[0], "mirror": leaves[1]}
    with wiki_for(sandbox, "target") as wiki:
        for row in picked.values():
            rewritten = wiki.post(f"/pages/{row.target_id}", json={"content": EDITED})
            assert rewritten.status_code == 200, rewritten.text
    return picked


def _delete_at_the_source(sandbox: RunningSandbox, comment: LedgerRow, page: LedgerRow) -> None:
    """The source deletes one of the edited comments and one of the rewritten pages."""
    with client_for(sandbox, "source") as tracker:
        comment_id = comment.source_id.split("/")[-1]
        gone = tracker.delete(f"/issues/{comment.parent}/comments/{comment_id}")
        assert gone.status_code in (200, 204), gone.text
    with wiki_for(sandbox, "source") as wiki:
        found = wiki.get("/pages", params={"slug": page.source_id})
        assert found.status_code == 200, found.text
        deleted = wiki.delete(f"/pages/{found.json()['id']}")
        assert deleted.status_code == 200, deleted.text


def test_a_mirrored_deletion_keeps_and_names_a_persons_edit(worked: Worked) -> None:
    """Deleted at the source, edited in the target since haul wrote it: a conflict. The
    comment and the page stay as the person left them; the run ends with exit 3 and haul
    failures names each, with what to do."""
    failures = worked.haul("failures")

    assert worked.synced.returncode == 3, worked.synced.stdout + worked.synced.stderr
    assert worked.comment_text("mirror") == EDITED
    assert worked.page_content("mirror") == EDITED
    assert "a person changed its text in the target since haul wrote it" in failures.stdout
    assert "a person changed its content in the target since haul wrote it" in failures.stdout
    assert 'conflicts = "source-wins"' in failures.stdout


def test_undo_through_a_gateway_sign_in_page_stops_with_the_rows_still_loaded(
    worked: Worked,
) -> None:
    """Every DELETE answered 200 with an HTML sign-in page: no deletion is confirmed, so undo
    stops (exit 1) naming the URL and what came back, and no row is marked undone."""
    before = [row.undo for row in worked.rows()]
    worked.sandbox.set_faults("html_delete:1")
    try:
        stopped = worked.haul("undo", "--yes")
    finally:
        worked.sandbox.set_faults("")

    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "DELETE http://" in stopped.stderr and "-> 200 (text/html" in stopped.stderr
    assert "the deletion is not confirmed" in stopped.stderr
    after = worked.rows()
    assert not any(row.undone for row in after)
    assert sum(row.undo == "in_flight" for row in after) <= 1 + before.count("in_flight")


def test_undo_keeps_and_names_what_a_person_changed_until_told_to_include_it(
    worked: Worked,
) -> None:
    """Undo deletes the checklist's other items but keeps the one a person edited and the one
    they added, and keeps the edited comments and rewritten pages, each named (in its output,
    haul status and haul failures); --include-changed deletes them, and never the added item."""
    haul_items = set(worked.checklist_items()) - {worked.added_item}

    undone = worked.haul("undo", "--yes")
    status = worked.haul("status")
    failures = worked.haul("failures")

    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert set(worked.checklist_items()) == {worked.edited_item, worked.added_item}
    assert len(haul_items) >= 2
    assert worked.comment_text("undo") == EDITED and worked.page_content("undo") == EDITED
    assert worked.worklog_held()
    for entity, why in (("comment", "its text"), ("wiki_page", "its content"),
                        ("checklist", "of its items"), ("worklog", "its comment")):  # fmt: skip
        assert f"kept as changed: {entity} " in undone.stdout, entity
        assert why in undone.stdout
        assert f"kept by undo: {entity}: " in status.stdout, entity
        assert f"{entity}:kept " in failures.stdout, entity
    assert "kept by undo: comment: 2 " in status.stdout  # the mirrored one's too

    everything = worked.haul("undo", "--yes", "--include-changed")

    assert everything.returncode == 0, everything.stdout + everything.stderr
    assert set(worked.checklist_items()) == {worked.added_item}
    assert worked.comment_text("undo") is None and worked.page_content("undo") is None
    assert worked.comment_text("mirror") is None and worked.page_content("mirror") is None
    assert not worked.worklog_held()
