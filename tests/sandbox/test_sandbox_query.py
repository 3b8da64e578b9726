"""The query-language subset and filter objects select exactly what they say; the rest is 400."""

from __future__ import annotations

import httpx
import pytest

from haul.sandbox.timefmt import parse_instant


@pytest.fixture(scope="module")
def everything(source: httpx.Client) -> list[dict]:
    return source.post("/issues/_search", params={"perPage": 1000}).json()


def keys(client: httpx.Client, body: dict) -> list[str]:
    reply = client.post("/issues/_search", json=body, params={"perPage": 1000})
    assert reply.status_code == 200, reply.text
    found = [issue["key"] for issue in reply.json()]
    assert client.post("/issues/_count", json=body).json() == len(found)
    return found


def when(issue: dict, field: str) -> int:
    return parse_instant(issue[field]) or 0


def test_queue_and_keys(source: httpx.Client, everything: list[dict]) -> None:
    """Queue and Key clauses, the queue/keys bodies and filter lists agree."""
    in_test = [i["key"] for i in everything if i["queue"]["key"] == "TEST"]
    assert keys(source, {"query": "Queue: TEST"}) == in_test
    assert keys(source, {"queue": "TEST"}) == in_test
    assert keys(source, {"filter": {"queue": "TEST"}}) == in_test
    assert sorted(keys(source, {"query": "Queue: TEST, DEV"})) == sorted(
        i["key"] for i in everything if i["queue"]["key"] in ("TEST", "DEV")
    )
    assert keys(source, {"query": "Key: TEST-1, TEST-2"}) == ["TEST-1", "TEST-2"]
    assert keys(source, {"keys": ["TEST-2", "NOPE-1"]}) == ["TEST-2"]
    assert keys(source, {"filter": {"key": ["TEST-3"]}}) == ["TEST-3"]


@pytest.mark.parametrize(
    ("clause", "test"),
    [
        ('Updated: >= "2023-06-01T00:00:00.000+0000"', lambda t, d: t >= d),
        ('Updated: > "2023-06-01 00:00:00"', lambda t, d: t > d),
        ('Updated: < "2023-06-01"', lambda t, d: t < d),
        ("Updated: <= 2023-05-31", lambda t, d: t < d),  # a bare date includes its whole day
    ],
)
def test_time_comparisons(source: httpx.Client, everything: list[dict], clause: str, test) -> None:
    """Each comparison operator, with the accepted date forms."""
    border = parse_instant("2023-06-01T00:00:00.000+0000")
    expected = [i["key"] for i in everything if test(when(i, "updatedAt"), border)]
    assert keys(source, {"query": clause}) == expected and 0 < len(expected) < len(everything)


def test_created_range_and_conjunction(source: httpx.Client, everything: list[dict]) -> None:
    """Created a..b joined with AND to a queue equals the same filter object."""
    lo, hi = parse_instant("2022-06-01"), parse_instant("2023-06-01T23:59:59.999+0000")
    expected = [
        i["key"]
        for i in everything
        if i["queue"]["key"] == "TEST" and lo <= when(i, "createdAt") <= hi
    ]
    query = 'Queue: TEST AND Created: "2022-06-01".."2023-06-01"'
    assert keys(source, {"query": query}) == expected and expected
    filtered = {
        "queue": "TEST",
        "createdAt": {"from": "2022-06-01", "to": "2023-06-01T23:59:59.999+0000"},
    }
    assert keys(source, {"filter": filtered}) == expected


def test_sort_by(source: httpx.Client, everything: list[dict]) -> None:
    """A trailing "Sort By" and a filter's order decide the order of the hits."""
    newest_first = keys(source, {"query": 'Queue: DEV "Sort By": Updated DESC'})
    stamps = [when(i, "updatedAt") for i in everything]
    by_key = {i["key"]: t for i, t in zip(everything, stamps, strict=True)}
    assert [by_key[k] for k in newest_first] == sorted(
        (by_key[k] for k in newest_first), reverse=True
    )
    oldest = keys(source, {"filter": {"queue": "DEV"}, "order": "+createdAt"})
    created = {i["key"]: when(i, "createdAt") for i in everything}
    assert [created[k] for k in oldest] == sorted(created[k] for k in oldest)
    by_number = keys(source, {"query": '"Sort by": Key ASC'})
    assert by_number == sorted(by_number, key=lambda k: (k.split("-")[0], int(k.split("-")[1])))


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"query": "Assignee: me()"}, "Assignee"),
        ({"query": "Queue: TEST OR Queue: DEV"}, "not supported"),
        ({"query": 'Updated: >= "last week"'}, "not a supported date"),
        ({"query": "Resolution: empty()"}, "Resolution"),
        ({"query": '"Sort By": Votes DESC'}, "Votes"),
        ({"filter": {"votes": 3}}, "votes"),
        ({"filter": {"updatedAt": "2024-01-01"}}, "updatedAt"),
        ({"filter": {"queue": "TEST"}, "order": "-votes"}, "votes"),
        ({"keys": ["TEST-1"], "filter": {"queue": "TEST"}}, "You can only use keys"),
    ],
)
def test_unsupported_queries_are_400(source: httpx.Client, body: dict, fragment: str) -> None:
    """Anything outside the subset is a 400 that says what is not supported."""
    for endpoint in ("/issues/_search", "/issues/_count"):
        reply = source.post(endpoint, json=body)
        assert reply.status_code == 400 and fragment in reply.json()["errorMessages"][0]
