"""Tokens, organisation headers, admin-only endpoints, prefixes, unknown routes and methods."""

from __future__ import annotations

import httpx
import pytest

from haul.sandbox.server import RunningSandbox

ADMIN_ONLY = [
    ("POST", "/issues/_import"),
    ("POST", "/issues/TEST-1/comments/_import"),
    ("POST", "/issues/TEST-1/worklogs/_import"),
    ("POST", "/issues/TEST-1/links/_import"),
    ("POST", "/issues/TEST-1/attachments/_import"),
    ("POST", "/issues/TEST-1/comments/1/attachments/_import"),
    ("POST", "/issues/_findByUnique?unique=x"),
]


def call(sandbox: RunningSandbox, headers: dict, path: str = "/myself") -> httpx.Response:
    return httpx.get(sandbox.info["tracker"] + path, headers=headers)


def test_token_schemes_and_org_headers(sandbox: RunningSandbox) -> None:
    """OAuth or Bearer; X-Org-ID or X-Cloud-Org-ID in any letter case."""
    token = sandbox.info["tokens"]["admin"]
    org = sandbox.info["orgs"]["source"]
    for headers in (
        {"Authorization": f"OAuth {token}", "X-Org-ID": org},
        {"Authorization": f"Bearer {token}", "X-Cloud-Org-ID": org},
        {"authorization": f"oauth {token}", "x-org-id": org},
        {"Authorization": f"OAuth {token}", "X-CLOUD-ORG-ID": org},
    ):
        assert call(sandbox, headers).status_code == 200, headers


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "OAuth wrong"},
        {"Authorization": "Basic {admin}"},
        {"Authorization": "OAuth {admin}"},
        {"Authorization": "OAuth {admin}", "X-Org-ID": "12345"},
        {"Authorization": "OAuth {admin}", "X-Org-Id": "not provided"},
    ],
)
def test_refusals_are_401(sandbox: RunningSandbox, headers: dict) -> None:
    """A missing or bad token, or a missing or unknown organisation: 401 with the envelope."""
    filled = {k: v.format(admin=sandbox.info["tokens"]["admin"]) for k, v in headers.items()}
    reply = call(sandbox, filled)
    assert reply.status_code == 401
    assert reply.json()["statusCode"] == 401 and reply.json()["errorMessages"]


@pytest.mark.parametrize(("method", "path"), ADMIN_ONLY)
def test_user_token_cannot_import(user: httpx.Client, method: str, path: str) -> None:
    """The user token reads fine but gets 403 on every admin endpoint."""
    reply = user.request(method, path, json={})
    assert reply.status_code == 403 and reply.json()["statusCode"] == 403


def test_user_token_reads(user: httpx.Client) -> None:
    assert user.post("/issues/_search", json={}).status_code == 200
    assert user.get("/issues/TEST-1/comments").status_code == 200


def test_v2_serves_the_same(sandbox: RunningSandbox, source: httpx.Client) -> None:
    """Everything is also under /v2, with /v2 in the links it prints."""
    v2 = sandbox.info["tracker"].removesuffix("/v3") + "/v2"
    reply = httpx.get(f"{v2}/issues/TEST-1", headers=source.headers)
    v3 = source.get("/issues/TEST-1").json()
    assert reply.json()["self"].endswith("/v2/issues/TEST-1")
    assert reply.json()["summary"] == v3["summary"]


def test_unknown_route_and_method(source: httpx.Client) -> None:
    """404 for an unknown path and 405 for a known path with a wrong method, both enveloped."""
    missing = source.get("/nothing/here")
    assert missing.status_code == 404 and set(missing.json()) == {
        "errors",
        "errorMessages",
        "statusCode",
    }
    wrong = source.delete("/issues/TEST-1")
    assert wrong.status_code == 405 and wrong.json()["statusCode"] == 405


def test_missing_issue(source: httpx.Client) -> None:
    reply = source.get("/issues/TEST-99999")
    assert reply.status_code == 404
    assert reply.json()["errorMessages"] == ["Issue does not exist."]
    assert source.get("/issues/TEST-99999/comments").status_code == 404


def test_bad_json_is_400(source: httpx.Client) -> None:
    reply = source.post(
        "/issues/_search", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400 and reply.json()["statusCode"] == 400
