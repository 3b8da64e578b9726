"""TrackerClient against the real sandbox over sockets: reads of the source org, imports
into the target org, auth refusals and injected network faults."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import aclosing
from typing import Any

import pytest

from haul.connectors.errors import (
    AmbiguousWriteError,
    AuthError,
    ScrollExpiredError,
    TransientError,
)
from haul.connectors.tracker import TrackerClient


def connect(sandbox, org: str, role: str = "admin", **options: Any) -> TrackerClient:
    info = sandbox.info
    return TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"][role], org_id=info["orgs"][org], **options
    )


@pytest.fixture
async def source(sandbox):
    async with connect(sandbox, "source") as client:
        yield client


@pytest.fixture
async def target(sandbox):
    async with connect(sandbox, "target") as client:
        yield client


@pytest.fixture
def no_faults(sandbox):
    """Faults set by a test are always switched off again."""
    yield sandbox.set_faults
    sandbox.set_faults("")


async def all_issues(client: TrackerClient) -> list[dict]:
    return [issue async for page in client.scroll_issues(per_scroll=100) for issue in page]


async def busiest_issue(client: TrackerClient, wanted: str) -> tuple[dict, list[dict]]:
    """The source issue with the most records of one kind (``wanted``), and those records."""
    best: tuple[dict, list[dict]] | None = None
    for issue in await all_issues(client):
        if wanted == "comments":
            records = [c async for c in client.iter_comments(issue["key"])]
        else:
            records = await getattr(client, f"list_{wanted}")(issue["key"])
        if best is None or len(records) > len(best[1]):
            best = (issue, records)
    assert best and best[1], f"the tiny org has no issue with {wanted}"
    return best


async def test_scroll_reaches_every_issue_and_agrees_with_count_and_search(source):
    """Small scroll pages cover the org exactly once; _count and page search agree."""
    pages = [page async for page in source.scroll_issues(per_scroll=7)]
    keys = [issue["key"] for page in pages for issue in page]
    assert len(pages) > 2
    assert len(keys) == len(set(keys)) == await source.count_issues()
    searched = [issue["key"] async for issue in source.search_issues(per_page=9)]
    assert sorted(searched) == sorted(keys)


async def test_scroll_closed_early_is_cleared_on_the_server(sandbox, source):
    """Leaving a scroll after its first page sends one _clear request."""
    route = "POST /v3/system/search/scroll/_clear"
    before = sandbox.stats()["by_route"].get(route, 0)
    async with aclosing(source.scroll_issues(per_scroll=5)) as pages:
        async for _ in pages:
            break
    assert sandbox.stats()["by_route"].get(route, 0) == before + 1


async def test_comment_pages_follow_the_scheme_less_links(source):
    """Comments read 2 per page equal comments read in one page, oldest first."""
    issue, comments = await busiest_issue(source, "comments")
    assert len(comments) > 2
    paged = [c async for c in source.iter_comments(issue["key"], per_page=2)]
    assert paged == comments
    assert [c["id"] for c in comments] == sorted(c["id"] for c in comments)


async def test_worklog_changelog_links_and_checklist_listings(source):
    """Each sub-record listing answers plain dicts of the recorded shapes."""
    issue, links = await busiest_issue(source, "links")
    assert {"type", "direction", "object"} <= set(links[0])
    changes = [change async for change in source.iter_changelog(issue["key"], per_page=3)]
    assert changes and changes[0]["type"] == "IssueCreated"
    _, items = await busiest_issue(source, "checklist")
    assert {"id", "text", "checked"} <= set(items[0])
    for issue in await all_issues(source):
        worklogs = [w async for w in source.iter_worklogs(issue["key"], per_page=1)]
        if worklogs:
            assert {"duration", "start", "createdBy"} <= set(worklogs[0])
            break
    else:
        pytest.fail("the tiny org has no worklogs")


async def test_attachment_download_matches_its_size(source, tmp_path):
    """A downloaded attachment has exactly the size its metadata states."""
    issue, attachments = await busiest_issue(source, "attachments")
    for attachment in attachments:
        path = tmp_path / attachment["id"]
        with path.open("wb") as sink:
            written = await source.download_attachment(
                issue["key"], attachment["id"], attachment["name"], sink
            )
        assert written == attachment["size"] == path.stat().st_size


async def test_dictionaries_queues_and_users(source, target):
    """Dictionaries share keys across orgs under different ids; users and queues page through."""
    source_statuses = {s["key"]: s["id"] for s in await source.list_statuses()}
    target_statuses = {s["key"]: s["id"] for s in await target.list_statuses()}
    assert set(source_statuses) == set(target_statuses)
    assert source_statuses != target_statuses
    for listing in ("list_issue_types", "list_priorities", "list_resolutions", "list_link_types"):
        assert await getattr(target, listing)()
    source_fields = {field["key"] for field in await source.list_fields()}
    target_fields = {field["key"] for field in await target.list_fields()}
    assert target_fields == source_fields >= {"summary", "status", "assignee", "priority", "type"}
    users = [user async for user in source.iter_users(per_page=3)]
    assert len(users) > 3 and len({u["login"] for u in users}) == len(users)
    queues = [queue["key"] async for queue in target.iter_queues(per_page=1)]
    assert "NEW" in queues and (await target.get_queue("NEW"))["key"] == "NEW"


class Mapper:
    """Maps the source org's users and dictionary values onto the target org."""

    async def load(self, source: TrackerClient, target: TrackerClient) -> Mapper:
        self.logins = {str(user["uid"]): user["login"] async for user in source.iter_users()}
        self.ids = {
            name: {item["key"]: item["id"] for item in await getattr(target, f"list_{name}")()}
            for name in ("statuses", "issue_types", "priorities", "resolutions")
        }
        return self

    def login(self, user_ref: dict) -> str:
        return self.logins[str(user_ref["id"])]

    def issue_body(self, issue: dict, unique: str) -> dict:
        body = {
            "queue": issue["queue"]["key"],
            "summary": issue["summary"],
            "description": issue.get("description", ""),
            "createdAt": issue["createdAt"],
            "createdBy": self.login(issue["createdBy"]),
            "updatedAt": issue["updatedAt"],
            "updatedBy": self.login(issue["updatedBy"]),
            "status": self.ids["statuses"][issue["status"]["key"]],
            "type": self.ids["issue_types"][issue["type"]["key"]],
            "priority": self.ids["priorities"][issue["priority"]["key"]],
            "unique": unique,
        }
        if issue.get("resolution"):
            body["resolution"] = self.ids["resolutions"][issue["resolution"]["key"]]
            body["resolvedAt"] = issue["resolvedAt"]
            body["resolvedBy"] = self.login(issue["resolvedBy"])
        return body


async def import_copy(source, target, mapper: Mapper, key: str) -> dict:
    issue = await source.get_issue(key)
    return await target.import_issue(mapper.issue_body(issue, f"test-{key}-{uuid.uuid4().hex}"))


async def test_import_an_issue_with_its_records_into_the_target(source, target, tmp_path):
    """Issue, comment, worklog, link, attachment, comment attachment and checklist land."""
    mapper = await Mapper().load(source, target)
    issue, links = await busiest_issue(source, "links")
    link = links[0]
    copy = await import_copy(source, target, mapper, issue["key"])
    other = await import_copy(source, target, mapper, link["object"]["key"])
    assert copy["createdAt"] == issue["createdAt"] and copy["key"] != issue["key"]

    imported_link = await target.import_link(
        copy["key"],
        {
            # any verb will do between two issues whose windows overlap; relates is the plainest
            "relationship": "relates",
            "issue": other["key"],
            "createdAt": link["createdAt"],
            "createdBy": mapper.login(link["createdBy"]),
        },
    )
    assert imported_link["object"]["key"] == other["key"]
    assert [x["object"]["key"] for x in await target.list_links(copy["key"])] == [other["key"]]

    comment = await target.import_comment(
        copy["key"],
        {"text": "перенесено ✓", "createdAt": issue["createdAt"], "createdBy": "robot"},
    )
    worklogs = await target.import_worklog(
        copy["key"],
        {
            "duration": "PT1H30M",
            "start": issue["createdAt"],
            "createdAt": issue["createdAt"],
            "createdBy": mapper.login(issue["createdBy"]),
        },
    )
    assert len(worklogs) == 1 and worklogs[0]["id"]
    assert [w["id"] async for w in target.iter_worklogs(copy["key"])] == [worklogs[0]["id"]]

    blob = tmp_path / "notes.txt"
    blob.write_bytes("строка\n".encode() * 500)
    stamp = {"created_at": issue["createdAt"], "created_by": "robot"}
    attached = await target.import_attachment(
        copy["key"], filename="notes.txt", source=blob, **stamp
    )
    assert attached["size"] == blob.stat().st_size
    on_comment = await target.import_comment_attachment(
        copy["key"], comment["id"], filename="c.txt", source=blob, **stamp
    )
    assert str(on_comment["commentId"]) == str(comment["id"])
    listed = [c async for c in target.iter_comments(copy["key"])]
    assert [a["id"] for a in listed[0]["attachments"]] == [on_comment["id"]]

    reply = await target.add_checklist_items(copy["key"], [{"text": "проверить", "checked": True}])
    assert [item["text"] for item in reply["checklistItems"]] == ["проверить"]
    assert (await target.find_issue(copy["key"]))["summary"] == issue["summary"]


async def test_user_token_is_refused_on_an_import(sandbox):
    """The user token may read but not import: AuthError naming the service and the org."""
    async with connect(sandbox, "target", role="user") as client:
        assert await client.myself()
        with pytest.raises(AuthError) as caught:
            await client.import_issue({"queue": "NEW", "summary": "x"})
    org = sandbox.info["orgs"]["target"]
    assert str(caught.value).startswith(f"tracker rejected the token for org {org} (403)")
    assert sandbox.info["tokens"]["user"] not in str(caught.value)


async def test_unknown_token_is_an_auth_error(sandbox):
    """A token the service does not know is rejected on the first call."""
    info = sandbox.info
    async with TrackerClient.connect(
        base_url=info["tracker"], token="not-a-token", org_id=info["orgs"]["source"]
    ) as client:
        with pytest.raises(AuthError, match="401"):
            await client.myself()


async def test_reply_dropped_after_apply_is_ambiguous_and_the_issue_exists(
    sandbox, source, target, no_faults
):
    """drop_after on _import: one request, AmbiguousWriteError, and the target has the issue."""
    mapper = await Mapper().load(source, target)
    issue = (await all_issues(source))[0]
    unique = f"drop-{uuid.uuid4().hex}"
    body = mapper.issue_body(await source.get_issue(issue["key"]), unique)
    no_faults("drop_after:1.0@*/issues/_import")
    sent_before = target.core.requests_sent
    with pytest.raises(AmbiguousWriteError):
        await target.import_issue(body)
    assert target.core.requests_sent == sent_before + 1
    no_faults("")
    found = await target.find_by_unique(unique)
    assert found is not None and found["summary"] == issue["summary"]


async def test_retry_after_from_the_server_is_honoured(sandbox, sleep, no_faults):
    """A real 429 with Retry-After: 2 waits 2 s per retry, then gives up as transient."""
    no_faults("429:1.0:2@*/myself")
    async with connect(sandbox, "source", max_attempts=3, sleep=sleep) as client:
        with pytest.raises(TransientError) as caught:
            await client.myself()
    assert caught.value.status == 429
    assert sleep.delays == [2.0, 2.0]


async def test_dropped_reads_are_retried(sandbox, sleep, no_faults):
    """A read whose connection drops is sent again (and again), then reported transient."""
    no_faults("drop_before:1.0@*/statuses")
    async with connect(sandbox, "source", max_attempts=3, sleep=sleep) as client:
        with pytest.raises(TransientError):
            await client.list_statuses()
        assert client.core.requests_sent == 3


async def test_scroll_outliving_its_ttl_raises_scroll_expired(source):
    """A consumer slower than the scroll's TTL gets ScrollExpiredError, not a partial list."""
    pages = source.scroll_issues(per_scroll=5, ttl_ms=1)
    async with aclosing(pages):
        first = await anext(pages)
        assert len(first) == 5
        await asyncio.sleep(0.05)
        with pytest.raises(ScrollExpiredError):
            await anext(pages)


async def test_a_reply_that_trickles_in_ends_within_the_patience_and_a_deadline(
    sandbox, no_faults
) -> None:
    """A reply sent a byte every 50 ms: each attempt is cut at the request deadline, and the
    attempts' own time counts in the outage patience, so the request gives up after about
    patience / deadline attempts, not after as many as the (here tiny) waits alone allow."""
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) > 20:
            raise AssertionError("still trying after 20 attempts: the patience ignores them")

    no_faults("dribble:1.0:50@*/myself")
    deadline, patience = 0.3, 1.0
    options = {"request_timeout": deadline, "outage_patience": patience, "max_backoff": 0.001}
    async with connect(sandbox, "source", sleep=no_wait, **options) as client:
        with pytest.raises(TransientError, match=r"within the request deadline of 0\.3 s"):
            await client.myself()
        attempts = client.core.requests_sent

    assert attempts <= patience / deadline + 1
