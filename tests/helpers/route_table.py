"""The route table: every route haul calls and every route the sandbox serves, for the tracker,
the wiki and forms, each with the vendor's reference page and, where one was found, its
documented examples.

The rows are hand-kept data, one TOML file per service in ``tests/routes/`` (an array of
``[[route]]`` tables); what they are compared with comes from the code:

- :func:`served_routes`: the routes the sandbox's three apps are built from;
- :func:`connector_paths`: every path the connectors (``connectors/*.py``) spell out, read
  from their source, with each ``{...}`` of an f-string as one unknown segment;
- at run time, the requests haul sends through a recording proxy (``recording_proxy``),
  matched to a row by :func:`find_row`.

A row::

    [[route]]
    route = "POST /v3/issues/_import"         # method and path template, as the sandbox serves it
    page = "https://..."                      # the vendor's reference page (v2: the older one)
    live = "tracker/issues/import_.json"      # a recorded live reply in tests/live_replies/
    fields = {queue = "string", ...}          # the documented request fields and JSON types
    required = ["queue", ...]
    [route.example]                           # the page's examples, copied as data
    page = "https://..."                      # where they were copied from
    request = '''{...}'''                     # sent to the sandbox, which must accept it
    reply = '''{...}'''                       # parsed by haul's connector...
    connector = ["get_issue", "TEST-1"]       # ...through this client method
    bind = {createdBy = "user"}               # body values swapped for the sandbox org's own
    pending = "..."                           # the sandbox does not accept it yet (an xfail)

Tracker rows name the ``/v3`` path; the sandbox serves each under ``/v2`` as well.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TABLES = REPO / "tests" / "routes"
LIVE_REPLIES = REPO / "tests" / "live_replies"
CONNECTORS = REPO / "connectors"
SERVICES = ("tracker", "wiki", "forms")
V2, V3 = "/v2/", "/v3/"
NOT_ROUTES = ("/proc/", "/v1")  # a file the budget reads; the wiki's API root
JSON_TYPES = {
    str: "string",
    bool: "boolean",
    int: "number",
    float: "number",
    list: "array",
    dict: "object",
    type(None): "null",
}


@dataclass(frozen=True)
class Example:
    """A reference page's documented request and reply, copied as data with the address."""

    page: str
    request: Any = None
    reply: Any = None
    query: dict[str, str] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    pending: str = ""  # why the sandbox does not accept it yet: the test is a strict xfail
    connector: tuple[Any, ...] = ()  # the connector method (and arguments) that reads the reply
    kwargs: dict[str, Any] = field(default_factory=dict)  # its keyword arguments


@dataclass(frozen=True)
class Row:
    service: str
    method: str
    path: str
    page: str = ""  # the vendor's reference page (the tracker's: for API v3)
    v2: str = ""  # the tracker's v2 page, where it differs
    no_page: str = ""  # why no vendor page is named (a sandbox-only route)
    live: str = ""
    fields: dict[str, str] = field(default_factory=dict)  # name -> "string|number"...
    open_fields: bool = False  # the page lets a body name the org's own fields too
    required: tuple[str, ...] = ()
    example: Example | None = None

    @property
    def route(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def segments(self) -> list[str]:
        return self.path.strip("/").split("/")


def load_rows(service: str) -> list[Row]:
    """The rows of one service, in the file's order."""
    data = tomllib.loads((TABLES / f"{service}.toml").read_text(encoding="utf-8"))
    return [_row(service, entry) for entry in data.get("route", [])]


def all_rows() -> list[Row]:
    return [row for service in SERVICES for row in load_rows(service)]


def _row(service: str, entry: dict[str, Any]) -> Row:
    method, path = entry.pop("route").split(" ", 1)
    example = entry.pop("example", None)
    if example is not None:
        for part in ("request", "reply"):
            if part in example:
                example[part] = json.loads(example[part])
        example["connector"] = tuple(example.get("connector", ()))
        example = Example(**example)
    required = tuple(entry.pop("required", ()))
    return Row(service, method, path, example=example, required=required, **entry)


# -- matching a request to its row ---------------------------------------------------------


def _matches(template: list[str], segments: list[str]) -> bool:
    return len(template) == len(segments) and all(
        t == s or (t.startswith("{") and s != "") for t, s in zip(template, segments, strict=True)
    )


def find_row(rows: list[Row], method: str, path: str) -> Row | None:
    """The row serving ``method path`` (``/v2`` read as ``/v3``); the most specific when several
    templates match (``/issues/_search`` before ``/issues/{key}``), as the router orders them."""
    if path.startswith(V2):
        path = V3 + path.removeprefix(V2)
    segments = path.strip("/").split("/")
    found = [r for r in rows if r.method == method and _matches(r.segments, segments)]
    return max(found, key=lambda r: sum(not s.startswith("{") for s in r.segments), default=None)


def shape_of(path: str) -> str:
    """A template with its parameters unnamed: ``/issues/{key}`` -> ``/issues/{}``."""
    return re.sub(r"\{[^}]*\}", "{}", path)


# -- the routes the code serves and calls --------------------------------------------------


def served_routes() -> dict[str, set[str]]:
    """``{service: {"METHOD /path", ...}}`` from the sandbox apps' route lists."""
    from haul.sandbox.forms import app as forms_app
    from haul.sandbox.tracker import app as tracker_app
    from haul.sandbox.wiki import app as wiki_app

    def named(prefix: str, api: tuple[tuple[str, str, Any], ...]) -> set[str]:
        return {f"{m} {prefix}{re.sub(r':[a-z]+}', '}', p)}" for m, p, _ in api}

    return {
        "tracker": named("/v3", tracker_app.API),
        "wiki": named(wiki_app.ROOT, wiki_app.API),
        "forms": named("/v1", forms_app.API),
    }


def connector_paths() -> dict[str, set[str]]:
    """``{connector module: {path shape, ...}}``: every path literal or f-string starting with
    ``/`` in the connectors' source (an f-string's fields become ``{}``)."""
    found: dict[str, set[str]] = {}
    for module in sorted(CONNECTORS.glob("*.py")):
        paths = _paths_in(ast.parse(module.read_text(encoding="utf-8")))
        if paths:
            found[module.stem] = paths
    return found


def _paths_in(tree: ast.AST) -> set[str]:
    inside_fstrings = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    in_messages = {  # `self._unexpected("GET", "/operations/move", ...)` names a route in prose
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "_unexpected"
        for arg in node.args
    }
    paths = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                str(p.value) if isinstance(p, ast.Constant) else "{}" for p in node.values
            )
        elif isinstance(node, ast.Constant) and id(node) not in inside_fstrings | in_messages:
            text = node.value if isinstance(node.value, str) else ""
        else:
            continue
        if re.fullmatch(r"/[\w{}./-]+", text) and not text.startswith(NOT_ROUTES):
            paths.add(text)
    return paths


def service_of_connector(module: str) -> str:
    return next(s for s in SERVICES if module.startswith(s))


def rows_for_shape(rows: list[Row], shape: str) -> list[Row]:
    """The rows a connector's path shape can reach: same segment count, literal segments equal
    where both sides spell one out; a tracker or wiki path is written below its API root."""
    wanted = shape.strip("/").split("/")

    def fits(row: Row) -> bool:
        segments = row.segments
        if row.service == "tracker" or segments[0] == "v1":
            segments = segments[1:]
        return len(segments) == len(wanted) and all(
            a == b or a.startswith("{") or b == "{}" for a, b in zip(segments, wanted, strict=True)
        )

    return [row for row in rows if fits(row) or shape_of(row.path) == shape]


def json_type(value: Any) -> str:
    return JSON_TYPES[type(value)]


def live_reply(row: Row) -> dict[str, Any]:
    return json.loads((LIVE_REPLIES / row.live).read_text(encoding="utf-8"))
