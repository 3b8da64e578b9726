"""The route table (tests/routes/*.toml) lists exactly the routes the code serves and calls, each
row names its reference page or says why it has none, and the published page is the table's."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.helpers import route_page
from tests.helpers.route_table import (
    LIVE_REPLIES,
    SERVICES,
    all_rows,
    connector_paths,
    load_rows,
    rows_for_shape,
    served_routes,
    service_of_connector,
)

pytestmark = pytest.mark.fast  # reads source and data; no sandbox, no haul process

VENDOR_HOSTS = ("yandex.ru", "yandex.cloud", "yandex.com")


@pytest.mark.parametrize("service", SERVICES)
def test_every_route_the_sandbox_serves_has_a_row(service: str) -> None:
    rows = {row.route for row in load_rows(service)}
    missing = sorted(served_routes()[service] - rows)
    assert missing == [], f"add a [[route]] to tests/routes/{service}.toml for: {missing}"


@pytest.mark.parametrize("service", SERVICES)
def test_no_row_is_twice_in_the_table(service: str) -> None:
    routes = [row.route for row in load_rows(service)]
    assert sorted({r for r in routes if routes.count(r) > 1}) == []


def test_every_path_a_connector_spells_reaches_a_row() -> None:
    rows = all_rows()
    unlisted = {
        f"{module}: {shape}"
        for module, shapes in connector_paths().items()
        for shape in shapes
        if not [
            row
            for row in rows_for_shape(rows, shape)
            if row.service == service_of_connector(module)
        ]
    }
    assert sorted(unlisted) == [], "a connector calls a route the table does not list"


def test_every_row_is_served_or_called() -> None:
    """A row for a route neither the sandbox serves nor a connector calls is a stale row."""
    served, rows = served_routes(), all_rows()
    called = {
        row.route
        for module, shapes in connector_paths().items()
        for shape in shapes
        for row in rows_for_shape(rows, shape)
        if row.service == service_of_connector(module)
    }
    stale = [
        f"{row.service}: {row.route}"
        for row in rows
        if row.route not in served[row.service] and row.route not in called
    ]
    assert stale == []


def test_every_row_names_a_vendor_page_or_says_why_not() -> None:
    """A row either names vendor pages (https, on the vendor's hosts) or is counted as "not
    found" on the published page; a sandbox-only route says so instead."""
    for row in all_rows():
        for url in (row.page, row.v2, row.example.page if row.example else ""):
            if url:
                parts = urlsplit(url)
                assert parts.scheme == "https" and parts.hostname, (row.route, url)
                assert parts.hostname.endswith(VENDOR_HOSTS), (row.route, url)
        assert not (row.no_page and row.page), f"{row.route}: a page and a reason for none"


def test_every_live_reply_a_row_names_is_kept() -> None:
    missing = [
        row.live for row in all_rows() if row.live and not (LIVE_REPLIES / row.live).exists()
    ]
    assert missing == []


def test_documented_request_examples_send_only_documented_fields() -> None:
    """Where a row keeps the page's field list, its copied request example fits it (a copying
    slip shows here, not as a puzzling sandbox reply)."""
    for row in all_rows():
        if row.example and isinstance(row.example.request, dict) and row.fields:
            extra = set(row.example.request) - set(row.fields)
            assert extra == set(), f"{row.route}: {sorted(extra)} not in the documented fields"
            assert set(row.required) <= set(row.example.request), row.route


def test_the_published_page_is_the_tables() -> None:
    assert route_page.PAGE.exists(), "run: python -m tests.helpers.route_page"
    committed = route_page.PAGE.read_text(encoding="utf-8")
    assert committed == route_page.render(), "run: python -m tests.helpers.route_page"


def test_the_page_counts_the_rows_whose_example_was_not_found() -> None:
    text = route_page.render()
    for service in SERVICES:
        rows = load_rows(service)
        missing = sum(row.example is None for row in rows)
        assert f"| {service} | {len(rows)} |" in text
        summary = next(line for line in text.splitlines() if line.startswith(f"| {service} |"))
        assert summary.rstrip(" |").endswith(f"| {missing}")
