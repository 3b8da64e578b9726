"""The route table against the wire: one small migration of all three services runs through a
recording proxy in front of the sandbox, and

- every request haul sent has a row in the table (a route called without a row fails here);
- haul's own request body for a row carries only the fields the vendor's page documents, with
  the documented JSON types;
- each documented request example is sent to the sandbox and accepted (2xx);
- each documented reply example is parsed by haul's connector.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from haul.connectors.forms import FormsClient
from haul.connectors.tracker import TrackerClient
from haul.connectors.wiki import WikiClient
from haul.pipelines.commands.run import run_all
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from tests.helpers.forms_backfill import PAGE, rules
from tests.helpers.haul_fixtures import TOKEN_ENV, environ
from tests.helpers.recording_proxy import RecordingProxy, Sent
from tests.helpers.route_table import SERVICES, Row, all_rows, find_row, json_type, load_rows

CLIENTS = {"tracker": TrackerClient, "wiki": WikiClient, "forms": FormsClient}
ROWS = all_rows()
VALUES = (  # what `values` finds in the source org, for the examples to bind
    *("queue", "queue_ref", "user", "uid", "key", "other_key", "third_key", "macro_id"),
    *("category_id", "entity_type", "board_ref", "idx", "page_ref", "comment_id", "survey_id"),
)


@dataclass
class Migrated:
    info: dict[str, Any]
    sent: dict[str, list[Sent]]
    complete: bool


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The tiny source org's TEST queue (with its planning layer), a wiki root and two surveys
    back-filled, migrated by `run_all` through the recording proxy; then the sandbox stays up
    for the examples."""
    from haul.sandbox import server as sandbox_server

    directory = tmp_path_factory.mktemp("routes")
    with sandbox_server.start_sandbox(size="tiny", seed=23) as sandbox:
        info = sandbox.info
        with RecordingProxy({service: info[service] for service in SERVICES}) as proxy:
            support, _, feedback = info["surveys"]["source"]
            options = SandboxConfig(
                source_token_env=TOKEN_ENV, queues=["TEST"], services=SERVICES,
                # not into NEW, where the back-fill rules put answers: keys would collide
                queue_mapping={"TEST": "TEST"},
                endpoint_extra={"read_rps": 2000, "write_rps": 2000},
                wiki_roots=[PAGE], surveys=[support, feedback], sections=rules(info),
                scope_extra={"entities": "all"},
            )  # fmt: skip
            config = write_sandbox_config(directory, {**info, **proxy.urls}, options)
            summary = asyncio.run(
                run_all(load_config(config), all_services(), environ=environ(info))
            )
            yield Migrated(info, proxy.sent, summary.complete)


def test_the_migration_through_the_proxy_completes(migrated: Migrated) -> None:
    assert migrated.complete
    assert all(migrated.sent[service] for service in SERVICES)


@pytest.mark.parametrize("service", SERVICES)
def test_every_request_haul_sends_has_a_row(migrated: Migrated, service: str) -> None:
    rows = load_rows(service)
    unlisted = sorted(
        {
            f"{s.method} {s.path}"
            for s in migrated.sent[service]
            if not find_row(rows, s.method, s.path)
        }
    )
    assert unlisted == [], f"add a [[route]] to tests/routes/{service}.toml for: {unlisted}"


def test_haul_calls_the_tracker_by_its_v3_paths(migrated: Migrated) -> None:
    """The sandbox serves /v2 and /v3 alike; haul sends the v3 form."""
    assert {s.path.split("/")[1] for s in migrated.sent["tracker"]} == {"v3"}


@pytest.mark.parametrize("service", SERVICES)
def test_haul_sends_only_the_documented_fields(migrated: Migrated, service: str) -> None:
    """For each row that keeps its page's field list, every body haul sent on that route (each
    record of a list body) names only those fields (a row with ``open_fields`` takes the org's own fields too), each with a
    documented JSON type."""
    rows = load_rows(service)
    wrong: set[str] = set()
    for sent in migrated.sent[service]:
        row = find_row(rows, sent.method, sent.path)
        if row is None or not row.fields:
            continue
        items = sent.body if isinstance(sent.body, list) else [sent.body]  # a list of records
        for name, value in (
            pair for item in items if isinstance(item, dict) for pair in item.items()
        ):
            documented = row.fields.get(name)
            if documented is None:
                if not row.open_fields:
                    wrong.add(f"{row.route}: {name} is not documented")
            elif json_type(value) not in documented.split("|"):
                wrong.add(f"{row.route}: {name} is {json_type(value)}, documented {documented}")
    assert sorted(wrong) == []


# -- the pages' examples ---------------------------------------------------------------


def _with_examples(part: str) -> list[Any]:
    rows = [row for row in ROWS if row.example and getattr(row.example, part) is not None]
    return [
        pytest.param(
            row,
            id=row.route,
            marks=[pytest.mark.xfail(strict=True, reason=row.example.pending)]
            if row.example and row.example.pending and part == "request"
            else [],
        )
        for row in rows
    ]


@pytest.fixture(scope="module")
def values(migrated: Migrated) -> dict[str, Any]:
    """The source org's own values the examples are bound to (a path parameter or a body
    value named by the row's ``bind``): a queue, a user, an issue imported from the page's own
    example (so that its time window fits the other import examples), a page, a survey."""
    info = migrated.info
    imported = _row("tracker", "POST /v3/issues/_import")
    assert imported.example and isinstance(imported.example.request, dict)
    with httpx.Client(base_url=info["tracker"], headers=_headers(info), timeout=30) as tracker:
        me = tracker.get("/myself").json()
        found = {"queue": "TEST", "user": me["login"], "uid": int(me["uid"])}
        body = _bound(imported.example.request, imported, found)
        keys = [tracker.post("/issues/_import", json=body).json()["key"] for _ in range(3)]
        macro = tracker.get("/queues/TEST/macros").json()[0]["id"]
        category = tracker.get("/fields/categories").json()[0]["id"]
        queue = tracker.get("/queues/TEST").json()
        board = tracker.get("/boards").json()[0]["id"]
    with httpx.Client(base_url=info["wiki"], headers=_headers(info), timeout=30) as wiki:
        page = wiki.get("/pages", params={"slug": PAGE}).json()["id"]
        comment = wiki.post(f"/pages/{page}/comments", json={"body": "a thread"}).json()["id"]
    found = {
        **found,
        **dict(zip(("key", "other_key", "third_key"), keys, strict=True)),
        "macro_id": macro,
        "category_id": category,
        "entity_type": "project",
        "queue_ref": {"id": queue["id"], "key": queue["key"]},
        "board_ref": {"id": str(board)},
        "idx": page,
        "page_ref": {"id": page},
        "comment_id": comment,
        "survey_id": info["surveys"]["source"][0],
    }
    assert set(found) == set(VALUES)
    return found


@pytest.mark.parametrize("row", _with_examples("request"))
def test_the_documented_request_example_is_accepted(
    migrated: Migrated, values: dict[str, Any], row: Row
) -> None:
    assert row.example is not None
    info = migrated.info
    path = row.path.format(**{name: values[name] for name in _params(row.path)})
    url = info[row.service].removesuffix("/v3").removesuffix("/v1") + path
    body = _bound(row.example.request, row, values)
    reply = httpx.request(
        row.method, url, headers=_headers(info), timeout=30, params=row.example.query,
        json=None if body is None else body,
    )  # fmt: skip
    assert reply.is_success, f"{row.example.page}: {reply.status_code} {reply.text[:300]}"


@pytest.mark.parametrize("row", _with_examples("reply"))
def test_the_documented_reply_example_parses(row: Row) -> None:
    """The page's reply, served for any request, read by the connector method the row names."""
    assert row.example is not None and row.example.connector
    reply = row.example.reply
    client = CLIENTS[row.service].connect(
        base_url="https://vendor.example/v1",
        token="t",
        org_id="1",
        transport=httpx.MockTransport(lambda request: httpx.Response(200, json=reply)),
    )
    name, *args = row.example.connector
    got = asyncio.run(_drain(getattr(client, name)(*args, **row.example.kwargs)))
    assert got not in (None, [], {}), f"{row.route}: {name} read nothing from {reply!r}"[:300]


async def _drain(call: Any) -> Any:
    if inspect.isasyncgen(call):
        return [item async for item in call]
    return await call


def _bound(body: Any, row: Row, values: dict[str, Any]) -> Any:
    """The example with each top-level value the row binds replaced by the org's own."""
    if not isinstance(body, dict) or row.example is None:
        return body
    return {k: values[row.example.bind[k]] if k in row.example.bind else v for k, v in body.items()}


def _params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _row(service: str, route: str) -> Row:
    return next(row for row in load_rows(service) if row.route == route)


def _headers(info: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"]["source"]}


def test_the_examples_bind_only_known_values() -> None:
    """A row binds only the values the `values` fixture finds (a typo fails here, fast)."""
    known = set(VALUES)
    for row in ROWS:
        if row.example:
            assert set(row.example.bind.values()) <= known, row.route
            if row.example.request is not None:
                assert set(_params(row.path)) <= known, row.route
