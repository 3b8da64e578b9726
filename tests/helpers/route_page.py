"""Publish the route table as ``docs/reference/routes.md``: ``python -m tests.helpers.route_page``
(``--check`` exits 1 when the committed page differs from what the table gives).

The page is generated, never edited by hand: its rows come from ``tests/routes/*.toml``, which
``tests/routes/test_route_table.py`` keeps equal to the routes the code serves and calls.
"""

from __future__ import annotations

import sys

from tests.helpers.route_table import REPO, SERVICES, Row, load_rows

PAGE = REPO / "docs" / "reference" / "routes.md"
TITLES = {"tracker": "Tracker (API v3; v2 served alike)", "wiki": "Wiki", "forms": "Forms"}

INTRO = """\
# Route table

Every route haul calls and every route its sandbox serves, with the vendor's reference page
for it. haul is tested against its sandbox, and the sandbox is this project's reading of the
vendor's pages: this table is where the two readings meet. Where a page documents an example
request, the sandbox must accept it; where it documents a reply, haul's connector must parse
it; and haul's own request for the route may only send fields the page documents, with the
documented JSON types (`tests/routes/test_route_examples.py`).

Generated from `tests/routes/*.toml` by `python -m tests.helpers.route_page`; a test fails when
a route is served or called without a row, or when this page differs from the table.

Columns: **page**: the vendor's reference page (v3; v2 where it differs) or why none is named;
**example**: whether the page's request (req) and reply (rep) examples are kept as data (and
tested); **fields**: the documented request fields haul's own requests are checked against;
**live**: a recorded reply of the live service in `tests/live_replies/`.
"""


def render() -> str:
    parts = [INTRO, _summary()]
    for service in SERVICES:
        parts.append(_service_table(service, load_rows(service)))
    return "\n".join(parts)


def _summary() -> str:
    lines = [
        "| service | routes | with a reference page | with an example | example not found |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for service in SERVICES:
        rows = load_rows(service)
        paged = sum(bool(r.page or r.v2) for r in rows)
        examples = sum(r.example is not None for r in rows)
        lines.append(f"| {service} | {len(rows)} | {paged} | {examples} | {len(rows) - examples} |")
    return "\n".join(lines) + "\n"


def _service_table(service: str, rows: list[Row]) -> str:
    lines = [
        f"## {TITLES[service]}",
        "",
        "| method | path | page | example | fields | live |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [_line(row) for row in rows]
    return "\n".join(lines) + "\n"


def _line(row: Row) -> str:
    fields = ", ".join(f"`{name}`" for name in row.fields)
    if row.open_fields:
        fields += " and the org's own fields"
    return f"| {row.method} | `{row.path}` | {_page(row)} | {_example(row)} | {fields} | {_live(row)} |"


def _page(row: Row) -> str:
    first = "v3" if row.service == "tracker" else "v1"
    links = [f"[{name}]({url})" for name, url in ((first, row.page), ("v2", row.v2)) if url]
    if links:
        return ", ".join(links)
    return row.no_page or "not found"


def _example(row: Row) -> str:
    if row.example is None:
        return "not found"
    parts = (("req", row.example.request), ("rep", row.example.reply))
    kept = [name for name, part in parts if part is not None]
    pending = " (sandbox pending)" if row.example.pending else ""
    return " + ".join(kept) + pending


def _live(row: Row) -> str:
    return f"`{row.live}`" if row.live else ""


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        same = PAGE.exists() and PAGE.read_text(encoding="utf-8") == text
        print("docs/reference/routes.md is " + ("up to date" if same else "out of date"))
        return 0 if same else 1
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
