"""Which issues a search body selects, and in what order.

Body forms (only one of ``queue``, ``keys``, ``filter``, ``query``; none selects everything):

- ``{"queue": "TEST"}``, ``{"keys": ["TEST-1", "DEV-2"]}``
- ``{"filter": {"queue": "TEST", "updatedAt": {"from": "...", "to": "..."}}, "order": "-updatedAt"}``
- ``{"query": 'Queue: TEST AND Updated: >= "2024-01-01" "Sort By": Updated ASC'}``

The query language is a subset: ``Queue``, ``Key``, ``Status``, ``Type``, ``Priority`` (one value
or a comma list), ``Updated`` and ``Created`` with ``>=``, ``>``, ``<``, ``<=``, equality or
``"a".."b"``, ``"Have Links To Queue": <queue keys>`` (issues with links of any type to issues of
those queues, as the service's query-filter documentation says; the caller's search supplies
which queues an issue's links reach, see `Selection.linked_queues`), clauses joined by ``AND``,
and an optional trailing ``"Sort By": <field> ASC|DESC``.
Anything else is a 400 saying what is not supported.  A bare date compares by whole days:
``Updated: <= "2024-01-01"`` includes all of that day.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from haul.sandbox.timefmt import parse_instant
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.model import Issue

DAY_MS = 86_400_000
Condition = Callable[[Issue], bool]

_ONE_OF = "You can only use keys, a queue, or a search query"
_SORT = re.compile(r'\s*"?sort\s+by"?\s*:\s*(\w+)(?:\s+(asc|desc))?\s*$', re.IGNORECASE)
_CLAUSE = re.compile(r'^\s*("[^"]+"|[\w]+)\s*:\s*(.+?)\s*$', re.DOTALL)
_COMPARE = re.compile(r"^(>=|<=|>|<)?\s*(.+)$")
_SORT_FIELDS = {
    "updated": "updated",
    "updatedat": "updated",
    "created": "created",
    "createdat": "created",
    "key": "key",
}
_LIST_FIELDS = {"queue": "queue", "key": "key", "status": "status", "type": "type"}
_LIST_FIELDS["priority"] = "priority"
_TIME_FIELDS = {"updated": "updated_at", "updatedat": "updated_at"}
_TIME_FIELDS |= {"created": "created_at", "createdat": "created_at"}


@dataclass
class Selection:
    """The parsed search: a conjunction of conditions plus an optional explicit order."""

    kind: str  # "queue", "keys", "filter", "query" or "all"
    conditions: list[Condition] = field(default_factory=list)
    order: tuple[tuple[str, bool], ...] | None = None  # (field, descending), most significant first
    # the queues an issue's links reach, as the caller may see them ("Have Links To Queue")
    linked_queues: Callable[[Issue], set[str]] = field(default=lambda issue: set())

    def matches(self, issue: Issue) -> bool:
        return all(condition(issue) for condition in self.conditions)


def parse_body(body: object) -> Selection:
    """Turn a search body into a Selection; 400 on conflicting or unsupported forms."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise ApiError(400, "The search body must be a JSON object")
    # an empty filter beside a query selects nothing more: exporters send {"filter": {}, "query"}
    forms = [
        name
        for name in ("queue", "keys", "filter", "query")
        if body.get(name) is not None and not (name == "filter" and body[name] == {})
    ]
    if len(forms) > 1:
        raise ApiError(400, _ONE_OF)
    selection = Selection(forms[0] if forms else "all")
    if selection.kind == "queue":
        selection.conditions.append(_in("queue", _as_list(body["queue"], "queue")))
    elif selection.kind == "keys":
        selection.conditions.append(_in("key", _as_list(body["keys"], "keys")))
    elif selection.kind == "filter":
        _parse_filter(body["filter"], selection)
    elif selection.kind == "query":
        _parse_query(body["query"], selection)
    if body.get("order") is not None:
        selection.order = _parse_order(body["order"])
    return selection


def sort_issues(issues: list[Issue], selection: Selection, *, by_update: bool) -> list[Issue]:
    """Order hits (given in creation order): an explicit order wins; else updatedAt then key
    number (sorted scroll), or creation order as given (plain search, unsorted scroll)."""
    if selection.order is not None:
        hits = issues
        for name, descending in reversed(selection.order):  # stable sorts, least significant first
            hits = sorted(hits, key=_sort_key(name), reverse=descending)
        return hits
    if by_update:
        return sorted(issues, key=_sort_key("updated"))
    return issues  # the org keeps issues in creation order already


def _sort_key(name: str) -> Callable[[Issue], tuple]:
    if name == "updated":
        return lambda issue: (issue.updated_at, issue.number, issue.queue)
    if name == "created":
        return lambda issue: (issue.created_at, issue.number, issue.queue)
    return lambda issue: (issue.queue, issue.number)


def _as_list(value: object, name: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, str) and item for item in items):
        raise ApiError(400, f"'{name}' must be a string or a list of strings")
    return [str(item) for item in items]


def _in(attribute: str, values: list[str]) -> Condition:
    wanted = frozenset(values)
    return lambda issue: getattr(issue, attribute) in wanted


def _between(attribute: str, lo: int | None, hi: int | None) -> Condition:
    """Inclusive bounds; None leaves that side open."""

    def condition(issue: Issue) -> bool:
        value = getattr(issue, attribute)
        return (lo is None or value >= lo) and (hi is None or value <= hi)

    return condition


def _parse_filter(value: object, selection: Selection) -> None:
    if not isinstance(value, dict):
        raise ApiError(400, "'filter' must be a JSON object")
    for name, condition in value.items():
        lowered = name.lower()
        if lowered in _LIST_FIELDS:
            values = _as_list(condition, name)
            selection.conditions.append(_in(_LIST_FIELDS[lowered], values))
        elif lowered in _TIME_FIELDS:
            selection.conditions.append(_time_range(_TIME_FIELDS[lowered], name, condition))
        else:
            raise ApiError(400, f"Filter field '{name}' is not supported by the sandbox")


def _time_range(attribute: str, name: str, condition: object) -> Condition:
    if not isinstance(condition, dict) or not set(condition) <= {"from", "to"}:
        raise ApiError(400, f"'{name}' must be an object with 'from' and/or 'to'")
    bounds = {}
    for side in ("from", "to"):
        if condition.get(side) is not None:
            bounds[side] = parse_instant(condition[side])
            if bounds[side] is None:
                raise ApiError(400, f"'{name}.{side}' is not a valid timestamp")
    return _between(attribute, bounds.get("from"), bounds.get("to"))


def _parse_order(value: object) -> tuple[tuple[str, bool], ...]:
    """``"-updatedAt"`` or a list of such names, the most significant first."""
    names = value if isinstance(value, list) and value else [value]
    return tuple(_parse_order_name(name) for name in names)


def _parse_order_name(value: object) -> tuple[str, bool]:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "'order' must be a field name such as '+updatedAt' or '-createdAt'")
    text = value.strip()
    descending = text.startswith("-")
    name = _SORT_FIELDS.get(text.lstrip("+-").lower())
    if name is None:
        raise ApiError(400, f"Ordering by '{text.lstrip('+-')}' is not supported by the sandbox")
    return name, descending


def _parse_query(text: object, selection: Selection) -> None:
    if not isinstance(text, str):
        raise ApiError(400, "'query' must be a string")
    sort = _SORT.search(text)
    if sort:
        name = _SORT_FIELDS.get(sort.group(1).lower())
        if name is None:
            raise ApiError(400, f"Sorting by '{sort.group(1)}' is not supported by the sandbox")
        selection.order = ((name, (sort.group(2) or "asc").lower() == "desc"),)
        text = text[: sort.start()]
    if not text.strip():
        return
    for clause in re.split(r"\s+AND\s+", text.strip(), flags=re.IGNORECASE):
        selection.conditions.append(_parse_clause(clause, selection))


def _parse_clause(clause: str, selection: Selection) -> Condition:
    match = _CLAUSE.match(clause)
    if not match:
        raise ApiError(400, f"Query part '{clause.strip()}' is not supported by the sandbox")
    name = match.group(1).strip('"')
    lowered = name.lower()
    value = match.group(2)
    if lowered in _LIST_FIELDS:
        return _in(_LIST_FIELDS[lowered], _list_values(name, value))
    if lowered in _TIME_FIELDS:
        return _time_clause(_TIME_FIELDS[lowered], name, value)
    if lowered == "have links to queue":
        wanted = frozenset(_list_values(name, value))
        return lambda issue: bool(selection.linked_queues(issue) & wanted)
    raise ApiError(400, f"Query field '{name}' is not supported by the sandbox")


def _list_values(name: str, value: str) -> list[str]:
    items = [item.strip().strip('"') for item in value.split(",")]
    if not all(items) or any(re.search(r"[\s()!]", item) for item in items):
        raise ApiError(400, f"Query value '{value}' for {name} is not supported by the sandbox")
    return items


def _time_clause(attribute: str, name: str, value: str) -> Condition:
    if ".." in value:
        start, end = value.split("..", 1)
        lo, _ = _instant(start, name)
        hi, hi_day = _instant(end, name)
        return _between(attribute, lo, hi + DAY_MS - 1 if hi_day else hi)
    match = _COMPARE.match(value)
    operator = (match.group(1) if match else None) or "="
    raw = match.group(2) if match else value
    moment, whole_day = _instant(raw, name)
    last = moment + DAY_MS - 1 if whole_day else moment
    bounds = {
        ">=": (moment, None),
        ">": (last + 1, None),
        "<": (None, moment - 1),
        "<=": (None, last),
        "=": (moment, last),
    }[operator]
    return _between(attribute, *bounds)


def _instant(raw: str, name: str) -> tuple[int, bool]:
    """Parse a quoted or bare timestamp; also say whether it was a bare date (a whole day)."""
    text = raw.strip().strip('"')
    moment = parse_instant(text)
    if moment is None:
        raise ApiError(400, f"Query value '{raw.strip()}' for {name} is not a supported date")
    return moment, len(text) == 10
