"""Page numbers with the 10 000 cap, scroll (to the end, snapshot, expiry, clear), relative
id cursors with scheme-less Link headers."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from haul.sandbox.server import start_sandbox
from tests.helpers.sandbox_clients import client_for

SCROLL = {"scrollType": "sorted", "perScroll": 5}


def links(reply: httpx.Response) -> dict[str, str]:
    return {rel: url for url, rel in re.findall(r'<([^>]*)>; rel="(\w+)"', reply.headers["Link"])}


def scroll_all(client: httpx.Client, body: dict, params: dict) -> list[dict]:
    reply = client.post("/issues/_search", json=body, params=params)
    hits = reply.json()
    while "X-Scroll-Id" in reply.headers:
        next_id = reply.headers["X-Scroll-Id"]
        reply = client.post("/issues/_search", json=body, params={"scrollId": next_id})
        hits += reply.json()
    return hits


def test_page_headers_and_links(source: httpx.Client) -> None:
    """Totals in headers; absolute first/next/seek links; no next on the last page."""
    total = source.post("/issues/_count", json={}).json()
    reply = source.post("/issues/_search", json={}, params={"perPage": 20})
    assert reply.headers["X-Total-Count"] == str(total)
    assert reply.headers["X-Total-Pages"] == str(-(-total // 20))
    found = links(reply)
    assert found["next"].startswith("http://127.0.0.1:") and "page=2" in found["next"]
    assert found["seek"].endswith("perPage=20{&page}")
    keys = [issue["key"] for issue in reply.json()]
    page = 2
    while "next" in links(reply):
        reply = source.post("/issues/_search", json={}, params={"perPage": 20, "page": page})
        keys += [issue["key"] for issue in reply.json()]
        page += 1
    assert len(keys) == len(set(keys)) == total


def test_page_beyond_the_cap_is_refused(source: httpx.Client) -> None:
    """page * perPage over 10 000 is a 400 with the error envelope."""
    reply = source.post("/issues/_search", json={}, params={"perPage": 100, "page": 101})
    assert reply.status_code == 400
    assert reply.json()["errorMessages"] == ["Request exceeds 10000 items limit"]
    assert source.post("/issues/_search", params={"perPage": 100, "page": 100}).status_code == 200


@pytest.fixture(scope="module")
def medium() -> Iterator[httpx.Client]:
    """A medium source org grown to 10 001 issues, one past the page cap."""
    with start_sandbox(seed=3, size="medium") as running, client_for(running, "source") as client:
        extra = {"queue": "TEST", "summary": "One more", "createdBy": "bob"}
        reply = client.post("/issues/_import", json={**extra, "createdAt": "2024-01-01"})
        assert reply.status_code == 201
        yield client


def test_counts_past_the_cap(medium: httpx.Client) -> None:
    """Page search caps X-Total-Count at 10 000; _count and scroll report the true total."""
    assert medium.post("/issues/_count", json={}).json() == 10_001
    paged = medium.post("/issues/_search", json={}, params={"perPage": 1000})
    assert (paged.headers["X-Total-Count"], paged.headers["X-Total-Pages"]) == ("10000", "10")
    scrolled = medium.post("/issues/_search", json={}, params={"scrollType": "unsorted"})
    assert scrolled.headers["X-Total-Count"] == "10001"
    assert len(scroll_all(medium, {}, {"scrollType": "unsorted", "perScroll": 1000})) == 10_001


def test_sorted_scroll_order_and_links(source: httpx.Client) -> None:
    """Sorted scroll: updatedAt ascending then key number; links absolute; ids per page."""
    first = source.post("/issues/_search", json={}, params=SCROLL)
    found = links(first)
    assert found["first"].startswith("http://") and "scrollType=sorted" in found["first"]
    assert f"scrollId={first.headers['X-Scroll-Id']}" in found["next"]
    assert "X-Scroll-Token" in first.headers
    second = source.post(
        "/issues/_search", json={}, params={"scrollId": first.headers["X-Scroll-Id"]}
    )
    assert second.headers["X-Scroll-Id"] != first.headers["X-Scroll-Id"]
    hits = scroll_all(source, {}, SCROLL)
    order = [(h["updatedAt"], int(h["key"].split("-")[1])) for h in hits]
    assert order == sorted(order) and len(hits) == source.post("/issues/_count").json()


def test_last_scroll_page_has_no_scroll_id(source: httpx.Client) -> None:
    """The last page carries neither X-Scroll-Id nor a next link."""
    reply = source.post("/issues/_search", json={}, params={**SCROLL, "perScroll": 1000})
    assert "X-Scroll-Id" not in reply.headers and "X-Scroll-Token" not in reply.headers
    assert set(links(reply)) == {"first"}


def test_repeating_a_scroll_request_repeats_the_page(source: httpx.Client) -> None:
    """A retried request (its reply was lost) gets the same page, not the one after."""
    first = source.post("/issues/_search", json={}, params=SCROLL)
    params = {"scrollId": first.headers["X-Scroll-Id"]}
    again = [source.post("/issues/_search", json={}, params=params).json() for _ in range(2)]
    assert again[0] == again[1] and again[0] != first.json()


def test_scroll_is_a_snapshot(target: httpx.Client) -> None:
    """Edits after a scroll opened change neither its pages nor its order."""
    for n in range(1, 13):
        day = f"2023-03-{n:02d}T00:00:00.000+0000"
        body = {"queue": "DEV", "summary": f"snap {n}", "createdAt": day, "createdBy": "alice"}
        assert target.post("/issues/_import", json=body).status_code == 201
    body = {"query": "Queue: DEV"}
    first = target.post("/issues/_search", json=body, params=SCROLL)
    target.patch("/issues/DEV-1", json={"summary": "moved to the end"})
    target.patch("/issues/DEV-9", json={"summary": "edited later"})
    rest = scroll_all_from(target, body, first)
    summaries = [hit["summary"] for hit in first.json() + rest]
    assert summaries == [f"snap {n}" for n in range(1, 13)]
    fresh = [hit["summary"] for hit in scroll_all(target, body, SCROLL)]
    assert fresh[-2:] == ["moved to the end", "edited later"]


def scroll_all_from(client: httpx.Client, body: dict, reply: httpx.Response) -> list[dict]:
    hits: list[dict] = []
    while "X-Scroll-Id" in reply.headers:
        params = {"scrollId": reply.headers["X-Scroll-Id"]}
        reply = client.post("/issues/_search", json=body, params=params)
        hits += reply.json()
    return hits


def test_scroll_expires_unless_refreshed(source: httpx.Client) -> None:
    """Each request refreshes the TTL; an idle scroll dies with a 404 in the envelope."""
    params = {**SCROLL, "perScroll": 2, "scrollTTLMillis": 700}
    reply = source.post("/issues/_search", json={}, params=params)
    for _ in range(3):  # 3 x 0.4 s outlives one TTL, but each request renews it
        time.sleep(0.4)
        reply = source.post("/issues/_search", params={"scrollId": reply.headers["X-Scroll-Id"]})
        assert reply.status_code == 200
    time.sleep(0.9)
    expired = source.post("/issues/_search", params={"scrollId": reply.headers["X-Scroll-Id"]})
    assert expired.status_code == 404
    assert "expired or is unknown" in expired.json()["errorMessages"][0]
    assert expired.json()["statusCode"] == 404


def test_unknown_and_cleared_scrolls_are_404(source: httpx.Client) -> None:
    """_clear drops a scroll (200); its ids and made-up ids answer 404."""
    unknown = source.post("/issues/_search", params={"scrollId": "0" * 24})
    assert unknown.status_code == 404
    reply = source.post("/issues/_search", json={}, params=SCROLL)
    scroll_id, token = reply.headers["X-Scroll-Id"], reply.headers["X-Scroll-Token"]
    cleared = source.post("/system/search/scroll/_clear", json={scroll_id: token})
    assert cleared.status_code == 200
    assert source.post("/issues/_search", params={"scrollId": scroll_id}).status_code == 404


@pytest.mark.parametrize(
    ("body", "params", "message"),
    [
        ({"queue": "TEST"}, SCROLL, "Scroll is not supported"),
        ({"keys": ["TEST-1"]}, SCROLL, "Scroll is not supported"),
        ({}, {**SCROLL, "perScroll": 1001}, "perScroll"),
        ({}, {"scrollType": "random"}, "scrollType"),
        ({"queue": "TEST", "query": "Queue: DEV"}, {}, "You can only use keys, a queue"),
    ],
)
def test_bad_search_requests(source: httpx.Client, body: dict, params: dict, message: str) -> None:
    """Scroll over queue/keys bodies, perScroll over 1000, mixed body forms: 400."""
    reply = source.post("/issues/_search", json=body, params=params)
    assert reply.status_code == 400 and message in reply.json()["errorMessages"][0]


def busiest_issue(client: httpx.Client) -> tuple[str, list[dict]]:
    """The source issue with the most comments, and all of them in one page."""
    issues = client.post("/issues/_search", params={"perPage": 1000}).json()
    best = max(issues, key=lambda issue: issue["commentWithoutExternalMessageCount"])
    everything = client.get(f"/issues/{best['key']}/comments", params={"perPage": 1000}).json()
    return best["key"], everything


def test_relative_cursor_walks_every_comment(source: httpx.Client) -> None:
    """perPage + id cursor: follow the scheme-less next link's query to the end."""
    key, everything = busiest_issue(source)
    assert len(everything) > 6
    path = f"/issues/{key}/comments"
    reply = source.get(path, params={"perPage": 3})
    seen = reply.json()
    while "next" in links(reply):
        query = dict(parse_qsl(urlsplit("//" + links(reply)["next"]).query))
        reply = source.get(path, params=query)
        seen += reply.json()
    assert [c["id"] for c in seen] == [c["id"] for c in everything]
    assert [c["id"] for c in seen] == sorted(c["id"] for c in seen)


def test_relative_link_has_no_scheme(source: httpx.Client) -> None:
    """Link header: <host:port/v3/...?perPage=N>; rel="first", and next with id=<last id>."""
    key, everything = busiest_issue(source)
    reply = source.get(f"/issues/{key}/comments", params={"perPage": 2})
    first = rf'<127\.0\.0\.1:\d+/v3/issues/{key}/comments\?perPage=2>; rel="first"'
    after = everything[1]["id"]
    following = rf'<127\.0\.0\.1:\d+/v3/issues/{key}/comments\?id={after}&perPage=2>; rel="next"'
    assert re.fullmatch(f"{first}, {following}", reply.headers["Link"])
    last = source.get(f"/issues/{key}/comments", params={"perPage": 2, "id": everything[-3]["id"]})
    assert "next" not in links(last) and len(last.json()) == 2


@pytest.mark.parametrize("listing", ["worklog", "changelog"])
def test_other_relative_listings(source: httpx.Client, listing: str) -> None:
    """Worklog and changelog page the same way, in id order."""
    issues = source.post("/issues/_search", params={"perPage": 1000}).json()
    for issue in issues:
        everything = source.get(f"/issues/{issue['key']}/{listing}").json()
        if len(everything) >= 3:
            break
    reply = source.get(f"/issues/{issue['key']}/{listing}", params={"perPage": 1})
    seen = reply.json()
    while "next" in links(reply):
        query = dict(parse_qsl(urlsplit("//" + links(reply)["next"]).query))
        reply = source.get(f"/issues/{issue['key']}/{listing}", params=query)
        seen += reply.json()
    assert seen == everything and [e["id"] for e in seen] == sorted(e["id"] for e in seen)


def test_users_and_queues_page_by_number(source: httpx.Client) -> None:
    """Users: {"users", "hasNext"} plus the page headers; queues: an array plus headers."""
    first = source.get("/users", params={"perPage": 15})
    second = source.get("/users", params={"perPage": 15, "page": 2})
    assert first.json()["hasNext"] is True and second.json()["hasNext"] is False
    assert first.headers["X-Total-Count"] == "21" and first.headers["X-Total-Pages"] == "2"
    uids = [u["uid"] for u in first.json()["users"] + second.json()["users"]]
    assert uids == sorted(uids) and len(uids) == 21
    queues = source.get("/queues", params={"perPage": 2})
    assert len(queues.json()) == 2 and queues.headers["X-Total-Pages"] == "2"


def test_changelog_filters(source: httpx.Client) -> None:
    """type= and field= keep only the matching entries (and the cursor pages over those)."""
    issues = source.post("/issues/_search", params={"perPage": 1000}).json()
    key = next(i["key"] for i in issues if i["status"]["key"] == "closed")
    everything = source.get(f"/issues/{key}/changelog").json()
    workflow = source.get(f"/issues/{key}/changelog", params={"type": "IssueWorkflow"}).json()
    assert workflow == [e for e in everything if e["type"] == "IssueWorkflow"] and workflow
    resolution = source.get(f"/issues/{key}/changelog", params={"field": "resolution"}).json()
    assert [e["type"] for e in resolution] == ["IssueWorkflow"]
