"""Plain httpx clients of a running sandbox's three services, and the listings they drain.

The sandbox tests talk to the sandbox over real sockets with a client we did not write for
it, so a reply shape or a paging rule is checked as a caller of the live service meets it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from haul.sandbox.server import RunningSandbox


def client_for(sandbox: RunningSandbox, org: str, token: str = "admin") -> httpx.Client:
    """A client of the sandbox's tracker acting in ``org`` ("source"/"target") with a token."""
    info = sandbox.info
    headers = {
        "Authorization": f"OAuth {info['tokens'][token]}",
        "X-Org-ID": info["orgs"][org],
    }
    return httpx.Client(base_url=info["tracker"], headers=headers, timeout=30)


def tracker_call(info: dict[str, Any], org: str, method: str, path: str, **kwargs: Any) -> Any:
    """One admin request to the sandbox's tracker in ``org`` (a ``/_sandbox`` path goes to its
    control routes); asserts success and returns the JSON reply (None when empty)."""
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    base = info["tracker"]
    if path.startswith("/_sandbox"):
        base = base.rsplit("/v3", 1)[0]
    reply = httpx.request(method, base + path, headers=headers, **kwargs)
    assert reply.status_code < 300, reply.text
    return reply.json() if reply.content else None


def forms_for(sandbox: RunningSandbox, org: str = "source", token: str = "admin") -> httpx.Client:
    """A client of the sandbox's forms acting in ``org`` ("source"/"target") with a token."""
    info = sandbox.info
    headers = {"Authorization": f"OAuth {info['tokens'][token]}", "X-Org-Id": info["orgs"][org]}
    return httpx.Client(base_url=info["forms"], headers=headers, timeout=30)


def wiki_for(sandbox: RunningSandbox, org: str, token: str = "admin") -> httpx.Client:
    """A client of the sandbox's wiki acting in ``org`` ("source"/"target") with a token."""
    info = sandbox.info
    headers = {"Authorization": f"OAuth {info['tokens'][token]}", "X-Org-Id": info["orgs"][org]}
    return httpx.Client(base_url=info["wiki"], headers=headers, timeout=30)


def drain_answers(client: httpx.Client, survey: str, **params: object) -> list[dict]:
    """Every answer of a forms survey: each next_url names the retired /v3 route, so only its
    query string is carried onto our own /v1 request, over our own parameters."""
    answers: list[dict] = []
    carried: dict[str, str] = {}
    while True:
        reply = client.get(f"/surveys/{survey}/answers", params={**params, **carried})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        answers += body["answers"]
        if body["next"] is None:
            return answers
        link = urlsplit(body["next"]["next_url"])
        assert link.path == f"/v3/surveys/{survey}/answers"
        carried = dict(parse_qsl(link.query))


def drain_cursor(client: httpx.Client, path: str, **params: object) -> list[dict]:
    """Every item of a wiki cursor listing, following next_cursor until it is null."""
    items: list[dict] = []
    cursor = None
    while True:
        reply = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert reply.status_code == 200, reply.text
        body = reply.json()
        items += body["results"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items
