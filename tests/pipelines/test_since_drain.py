"""What a later drain may leave as staged (issue 42, item 3), rule by rule; the end-to-end
case over the sandbox is tests/pipelines/test_sync_reads_what_changed.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.streams import child_rows
from haul.pipelines.tracker.children.drain import IssueDrain
from haul.pipelines.tracker.children.since_drain import (
    EarlierDrain,
    comments_unchanged,
    listings_to_skip,
    named_by,
)
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast

T1, T2, T3, T4 = (f"2024-01-0{day}T10:00:00.000+0000" for day in (1, 2, 3, 4))


def issue(count: int, last: str | None) -> dict[str, Any]:
    return {
        "commentWithoutExternalMessageCount": count,
        "commentWithExternalMessageCount": 0,
        "lastCommentUpdatedAt": last,
    }


def comment(n: int, updated: str) -> dict[str, Any]:
    return {"id": n, "createdAt": T1, "updatedAt": updated}


def test_comments_are_unchanged_only_when_the_counters_and_the_newest_update_agree() -> None:
    """A comment added, deleted or edited moves the count or `lastCommentUpdatedAt`."""
    staged = [comment(1, T1), comment(2, T2)]
    assert comments_unchanged(issue(2, T2), staged)
    assert not comments_unchanged(issue(3, T3), staged)  # one added
    assert not comments_unchanged(issue(1, T2), staged)  # one deleted
    assert not comments_unchanged(issue(2, T3), staged)  # one edited
    assert not comments_unchanged({"lastCommentUpdatedAt": T2}, staged)  # no counters: list
    assert comments_unchanged(issue(0, None), [])


def test_the_changelog_resumes_from_the_last_entry_the_earlier_drain_could_rely_on() -> None:
    """An entry staged after the issue was read (it changed while drained) is read again."""
    entries = [{"id": "a1", "updatedAt": T1}, {"id": "a2", "updatedAt": T2},
               {"id": "a3", "updatedAt": T3}]  # fmt: skip
    earlier = EarlierDrain(drained_at=T2, comments=[], changelog=entries)
    assert earlier.resume_after() == "a2"
    assert [e["id"] for e in earlier.settled_changelog("a2")] == ["a1", "a2"]
    assert [e["id"] for e in earlier.newer(entries)] == ["a3"]
    assert EarlierDrain(drained_at=None, comments=[], changelog=entries).resume_after() is None


def test_remote_links_are_spared_only_by_entries_that_concern_something_else() -> None:
    """A field edit or a transition spares them; an unknown type, a link, or a field of links
    does not; a move or a clone spares nothing."""
    assert named_by([{"type": "IssueUpdated"}, {"type": "IssueWorkflow"}]) == set()
    assert named_by([{"type": "IssueRemoteLinked"}]) == {"remote_link"}
    assert named_by([{"type": "IssueLinked"}]) == {"link", "remote_link"}
    edit = {"type": "IssueUpdated", "fields": [{"field": {"id": "remotelinks"}}]}
    assert named_by([edit]) == {"remote_link"}
    assert named_by([{"type": "IssueWorklogAdded"}, {"type": "IssueMoved"}]) is None


def test_only_an_issue_whose_updated_at_moved_has_listings_spared_by_its_changelog() -> None:
    """Drained again without a change (an earlier problem), it lists all but its comments."""
    earlier = EarlierDrain(drained_at=T1, comments=[comment(1, T1)], changelog=[])
    same = listings_to_skip(issue(1, T1), earlier, updated_at=T1, new_entries=[])
    assert same == {"comment"}
    moved = listings_to_skip(
        issue(1, T1), earlier, updated_at=T2,
        new_entries=[{"type": "IssueCommentUpdated", "updatedAt": T2}],
    )  # fmt: skip
    assert moved == {"worklog", "link", "attachment", "remote_link"}  # the comments are listed


def test_a_move_of_updated_at_no_new_entry_is_at_spares_only_the_comments() -> None:
    """A change the service logs no entry for (a remote link, a checklist item) moves the
    issue past its changelog: every listing is asked again, but comments the counters vouch
    for."""
    earlier = EarlierDrain(drained_at=T1, comments=[comment(1, T1)], changelog=[])
    edit = {"type": "IssueUpdated", "updatedAt": T2}
    assert listings_to_skip(issue(1, T1), earlier, updated_at=T3, new_entries=[edit]) == {"comment"}
    assert listings_to_skip(issue(1, T1), earlier, updated_at=T3, new_entries=[]) == {"comment"}
    explained = listings_to_skip(issue(1, T1), earlier, updated_at=T2, new_entries=[edit])
    assert explained == {"comment", "worklog", "link", "attachment", "remote_link"}


async def test_a_drained_issue_resumes_its_changelog_and_lists_nothing_it_does_not_name(
    tmp_path: Path,
) -> None:
    """The changelog is asked from the last entry the earlier drain could rely on (`id`),
    staged whole again (the kept entries, then the new); a field edit lists nothing else."""
    asked: list[str] = []
    newer = [{"id": "a3", "updatedAt": T3, "type": "IssueUpdated"},
             {"id": "a4", "updatedAt": T4, "type": "IssueUpdated"}]  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.url.path.removeprefix('/v3')}?{request.url.query.decode()}")
        if request.url.path.endswith("/applications"):  # remote links might exist
            return httpx.Response(200, json=[{"id": "ru.yandex.github", "name": "GitHub"}])
        return httpx.Response(200, json=newer if "/changelog" in request.url.path else [])

    client = TrackerClient.connect(
        base_url="http://tracker.invalid/v3", token="t", org_id="1",
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    raw = {"key": "TEST-1", **issue(1, T1), "spent": "PT1H", "attachments": []}
    with StagingStore.open(tmp_path / "haul.db") as store:
        store.upsert_records("issue", [{"source_id": "TEST-1", "updated_at": T4, "raw": raw}])
        store.mark_drained("TEST-1", T2)
        staged = [{"id": "a1", "updatedAt": T1}, {"id": "a2", "updatedAt": T2},
                  {"id": "a3", "updatedAt": T3}]  # fmt: skip
        store.replace_children("TEST-1", "changelog", child_rows("TEST-1", staged))
        store.replace_children("TEST-1", "comment", child_rows("TEST-1", [comment(1, T1)]))
        drain = IssueDrain(client, store, changelog=True)
        async with client:
            children = await drain.fetch(store.get_record("issue", "TEST-1"))  # type: ignore[arg-type]
    assert [path for path in asked if "/issues/" in path] == [
        "/issues/TEST-1/changelog?perPage=100&id=a2"
    ]
    assert [row["raw"]["id"] for row in children["changelog"]] == ["a1", "a2", "a3", "a4"]
    assert not {"comment", "worklog", "link", "remote_link"} & children.keys()  # kept as staged
    assert drain.listing_requests == 1
