"""A later run reads only what changed (issue 42, item 3), over real sockets: after a first
extract, people edit, delete and add comments, edit a summary, log time and link two issues
through the plain API; the next extract lists comments only where the counters or
`lastCommentUpdatedAt` moved, the changelog from its last staged entry (or, not staged, read
for what changed), links and worklogs only where it names them, and still stages exactly what
the source holds. The run report gives the drain's requests per changed issue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.commands.run import extract
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import client_for, environ, source_queues, write_config

CHANGED = ("edited", "deleted", "added", "summary", "worklog", "linked", "other_end")


def _with_comments(store: StagingStore, count: int) -> list[str]:
    """Keys of staged issues holding at least `count` comments, none with a link staged."""
    linked = {r.parent for r in store.iter_records("link")}
    return sorted(
        r.source_id
        for r in store.iter_records("issue")
        if len(list(store.iter_records("comment", parent=r.source_id))) >= count
        and r.source_id not in linked
    )


async def _people_change(source: TrackerClient, store: StagingStore) -> dict[str, str]:
    commented = _with_comments(store, 2)
    keys = dict(zip(("edited", "deleted", "summary"), commented, strict=False))
    rest = [r.source_id for r in store.iter_records("issue") if r.source_id not in commented]
    keys |= dict(zip(("added", "worklog", "linked", "other_end"), sorted(rest), strict=False))
    assert len(keys) == len(CHANGED)
    first, *_ = await _listing(source, keys["edited"], "comment")
    await source.update_comment(keys["edited"], first["id"], {"text": "Edited overnight"})
    *_, last = await _listing(source, keys["deleted"], "comment")
    await source.delete_record(keys["deleted"], "comments", last["id"])
    call = source.core.request
    await call("POST", f"/issues/{keys['added']}/comments", json={"text": "Added overnight"})
    await source.update_issue(keys["summary"], {"summary": "Said again overnight"})
    await call("POST", f"/issues/{keys['worklog']}/worklog", json={"duration": "PT2H"})
    body = {"relationship": "relates", "issue": keys["other_end"]}
    await call("POST", f"/issues/{keys['linked']}/links", json=body)
    return keys


async def _listing(source: TrackerClient, key: str, entity: str) -> list[dict[str, Any]]:
    if entity == "comment":
        return [c async for c in source.iter_comments(key)]
    if entity == "worklog":
        return [w async for w in source.iter_worklogs(key)]
    if entity == "changelog":
        return [e async for e in source.iter_changelog(key)]
    return await source.list_links(key)


def _by_id(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Records by id, without the ref to their issue (its display is the issue's summary,
    which a child left as staged keeps as it was: nothing loads it)."""
    return {str(r["id"]): {k: v for k, v in r.items() if k != "issue"} for r in records}


def _staged(store: StagingStore, entity: str, key: str) -> dict[str, Any]:
    return _by_id([r.raw for r in store.iter_records(entity, parent=key)])


def _per_issue_reads(by_route: dict[str, int]) -> dict[str, int]:
    """GET /v3/issues/{key}/<listing> -> <listing>: n (downloads left out)."""
    reads = {}
    for route, count in by_route.items():
        method, _, path = route.partition(" ")
        if method == "GET" and path.startswith("/v3/issues/{key}/") and path.count("/") == 4:
            reads[path.rsplit("/", 1)[1]] = count
    return reads


def _since(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    return {
        route: n - before["by_route"].get(route, 0)
        for route, n in after["by_route"].items()
        if n != before["by_route"].get(route, 0)
    }


@pytest.mark.parametrize("changelog", [False, True], ids=["default", "changelog staged"])
async def test_a_later_extract_lists_only_what_changed_and_misses_nothing(
    sandbox: Any, tmp_path: Path, changelog: bool
) -> None:
    info = sandbox.info
    config = load_config(
        write_config(tmp_path, info, queues=source_queues(info), scope={"changelog": changelog})
    )
    await extract(config, all_services(), environ=environ(info))
    async with client_for(info, "source") as source:
        with StagingStore.open(config.staging_path) as store:
            keys = await _people_change(source, store)
        edited = await source.get_issue(keys["edited"])
        newest = max(c["updatedAt"] for c in await _listing(source, keys["edited"], "comment"))
        assert edited["lastCommentUpdatedAt"] == newest  # an edit moves it, as on the service
        before = sandbox.stats()
        summary = await extract(config, all_services(), environ=environ(info))
        reads = _per_issue_reads(_since(before, sandbox.stats()))
        with StagingStore.open(config.staging_path) as store:
            entities = ["comment", "worklog", "link"] + (["changelog"] if changelog else [])
            for key in {k for k in keys.values()}:
                for entity in entities:
                    expected = _by_id(await _listing(source, key, entity))
                    assert _staged(store, entity, key) == expected, (key, entity)

    assert summary.details["issues_drained"] == len(CHANGED)
    # comments where they changed (the summary's issue keeps its staged ones); the changelog
    # once an issue; links at both ends of the new one, and their remote links (a link's
    # entry might be a remote link's: nothing documents how one is told); worklogs where
    # time was logged
    assert reads == {
        "comments": 3, "changelog": len(CHANGED), "links": 2, "remotelinks": 2, "worklog": 1
    }  # fmt: skip
    assert summary.details["issue_drain_requests"] == sum(reads.values())
    assert summary.details["per_drained_issue_requests"] == round(
        sum(reads.values()) / len(CHANGED), 2
    )
