"""Generated organisations: deterministic per seed, internally consistent, realistic, sized."""

from __future__ import annotations

import hashlib
import re
import time

import httpx
import pytest

from haul.sandbox.server import RunningSandbox, start_sandbox
from haul.sandbox.timefmt import parse_instant
from haul.sandbox.tracker.seed.generate import build_world
from tests.helpers.sandbox_clients import client_for

LISTINGS = (
    "comments?expand=attachments",
    "worklog",
    "changelog",
    "links",
    "attachments",
    "checklistItems",
)


def at(text: str) -> int:
    moment = parse_instant(text)
    assert moment is not None, text
    return moment


def dump(sandbox: RunningSandbox, sample: int = 12) -> str:
    """Issues plus the records of the first few, with the port taken out."""
    with client_for(sandbox, "source") as client:
        issues = client.post("/issues/_search", params={"perPage": 1000}).json()
        parts = [issues]
        for issue in issues[:sample]:
            parts += [client.get(f"/issues/{issue['key']}/{name}").json() for name in LISTINGS]
        parts.append(client.get("/users").json())
    return re.sub(r"127\.0\.0\.1:\d+", "HOST", repr(parts))


@pytest.fixture(scope="module")
def everything(source: httpx.Client) -> dict[str, dict]:
    """Every source issue with all its records: {key: {"issue": ..., listing: [...]}}."""
    issues = source.post("/issues/_search", params={"perPage": 1000}).json()
    found = {}
    for issue in issues:
        entry = {"issue": issue}
        for name in LISTINGS:
            entry[name.split("?")[0]] = source.get(f"/issues/{issue['key']}/{name}").json()
        found[issue["key"]] = entry
    return found


def test_same_seed_same_data_other_seed_other_data(sandbox: RunningSandbox) -> None:
    """Two sandboxes with one seed serve identical data (whatever was read first); another
    seed serves different data."""
    with start_sandbox(seed=1, size="tiny") as twin, client_for(twin, "source") as client:
        for key in ("TEST-9", "DEV-3", "OPS-2"):  # touch records in another order first
            client.get(f"/issues/{key}/attachments")
        assert dump(twin) == dump(sandbox)
    with start_sandbox(seed=2, size="tiny") as other:
        assert dump(other) != dump(sandbox)


def test_attachment_bytes_are_deterministic(sandbox: RunningSandbox, everything) -> None:
    """Every generated file downloads with its listed size and the same bytes twice."""
    with client_for(sandbox, "source") as client:
        for entry in everything.values():
            for file in entry["attachments"]:
                first = client.get(file["content"]).content
                assert len(first) == file["size"]
        assert (
            hashlib.sha256(client.get(file["content"]).content).digest()
            == hashlib.sha256(first).digest()
        )


def test_times_are_consistent(everything: dict[str, dict]) -> None:
    """Records lie in their issue's window; links in both windows; resolvedAt <= updatedAt."""
    now = time.time() * 1000
    for key, entry in everything.items():
        issue = entry["issue"]
        lo, hi = at(issue["createdAt"]), at(issue["updatedAt"])
        assert lo <= hi < now
        if "resolvedAt" in issue:
            assert lo <= at(issue["resolvedAt"]) <= hi and issue["resolution"]
        for name, field in (
            ("comments", "createdAt"),
            ("worklog", "createdAt"),
            ("changelog", "updatedAt"),
            ("attachments", "createdAt"),
        ):
            for record in entry[name]:
                assert lo <= at(record[field]) <= hi, (key, name, record[field])
        for link in entry["links"]:
            other = everything[link["object"]["key"]]["issue"]
            assert (
                max(lo, at(other["createdAt"]))
                <= at(link["createdAt"])
                <= min(hi, at(other["updatedAt"]))
            )


def test_changelog_tells_the_story(everything: dict[str, dict]) -> None:
    """IssueCreated first; the last status change lands on the current status."""
    for entry in everything.values():
        log = entry["changelog"]
        assert log[0]["type"] == "IssueCreated" and 1 <= len(log) <= 15
        statuses = [
            f["to"]["key"] for e in log for f in e["fields"] if f["field"]["id"] == "status"
        ]
        assert statuses[-1] == entry["issue"]["status"]["key"]


def test_counts_and_spread(everything: dict[str, dict]) -> None:
    """Per-issue counts stay in the documented ranges and every kind of record occurs."""
    for entry in everything.values():
        assert len(entry["comments"]) == entry["issue"]["commentWithoutExternalMessageCount"] <= 30
        assert len(entry["worklog"]) <= 5 and len(entry["checklistItems"]) <= 6
    totals = {
        name: sum(len(e[name]) for e in everything.values())
        for name in ("comments", "worklog", "links", "attachments", "checklistItems")
    }
    assert all(totals.values()), totals
    assert 40 <= len(everything) <= 60
    link_types = {link["type"]["id"] for e in everything.values() for link in e["links"]}
    assert {"relates", "depends", "epic"} <= link_types
    assert any(
        link["object"]["key"].split("-")[0] != key.split("-")[0]
        for key, e in everything.items()
        for link in e["links"]
    )


def test_text_is_unicode_markdown_with_mentions(everything: dict[str, dict]) -> None:
    """Cyrillic, CJK and emoji appear; descriptions are markdown; texts mention other keys."""
    texts = [e["issue"]["summary"] + e["issue"].get("description", "") for e in everything.values()]
    texts += [c["text"] for e in everything.values() for c in e["comments"]]
    blob = "\n".join(texts)
    assert re.search("[а-яА-Я]", blob) and re.search("[\u4e00-\u9fff\u3040-\u30ff]", blob)
    assert re.search("[\U0001f300-\U0001faff]", blob)
    assert "## " in blob and re.search(r"\b(TEST|DEV|OPS)-\d+\b", blob)


def test_files_on_comments_and_one_big_file(everything: dict[str, dict]) -> None:
    """Some comments own files (listed on the issue too); tiny has one file of several MB."""
    owned = {
        a["id"]
        for e in everything.values()
        for c in e["comments"]
        for a in c.get("attachments", [])
    }
    listed = {a["id"] for e in everything.values() for a in e["attachments"]}
    assert owned and owned <= listed
    sizes = [a["size"] for e in everything.values() for a in e["attachments"]]
    assert len([s for s in sizes if s > 1_000_000]) == 1 and sorted(sizes)[len(sizes) // 2] < 30_000


def test_target_org_maps_by_key(source: httpx.Client, target: httpx.Client) -> None:
    """The target: no generated issues, the same queues plus NEW, the same logins and
    dictionary keys under other numeric ids."""
    source_queues = {q["key"] for q in source.get("/queues").json()}
    assert {q["key"] for q in target.get("/queues").json()} == source_queues | {"NEW"}
    for path in ("statuses", "issuetypes", "priorities", "resolutions"):
        ours, theirs = source.get(f"/{path}").json(), target.get(f"/{path}").json()
        assert {e["key"] for e in ours} == {e["key"] for e in theirs}
        assert not {e["id"] for e in ours} & {e["id"] for e in theirs}
    people = [client.get("/users").json()["users"] for client in (source, target)]
    assert [u["login"] for u in people[0]] != [] and {u["login"] for u in people[0]} == {
        u["login"] for u in people[1]
    }
    assert not {u["uid"] for u in people[0]} & {u["uid"] for u in people[1]}
    assert "robot" in {u["login"] for u in people[1]}
    with_org_issues = target.post("/issues/_search", json={"query": "Queue: OPS"}).json()
    assert with_org_issues == []


@pytest.mark.parametrize(
    ("size", "low", "high"),
    [
        ("small", 900, 1100),
        ("medium", 9_000, 11_000),
        pytest.param("large", 90_000, 110_000, marks=pytest.mark.slow),
    ],
)
def test_sizes(size: str, low: int, high: int) -> None:
    """Sizes hold about 1 000 / 10 000 / 100 000 issues; generation time is printed."""
    started = time.perf_counter()
    world = build_world(7, size, admin_token="a", user_token="u")
    took = time.perf_counter() - started
    count = len(world.org_by_role("source").issues)
    print(f"\nsandbox size {size}: {count} issues generated in {took:.2f} s")
    assert low <= count <= high
    big = [k for k in world.org_by_role("source").big_attachment_keys]
    assert 2 <= len(big) <= 20
