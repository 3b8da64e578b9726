"""Issue queries rewritten for the target: a saved filter's, a widget's, an autoaction's.

A query names queues (``Queue: TEST``), issues (``TEST-12`` anywhere, ``Key: TEST-12``) and
people (``Assignee: alice``); each is rewritten to what the target calls it: the queue through
``[mapping] queues``, the issue under its target key (a moved issue's new one), the person
through the user mapping. What has no counterpart in the target (a queue that is neither in
scope nor in the target, an issue that was not migrated, a person with no target user) is left
as it was and named in `Rewritten.kept`, so the caller counts it; nothing is dropped and no one
is replaced by the default user (that would change what the query selects).

A filter's conditions object (``{"queue": "TEST", "assignee": "alice"}``) is rewritten the
same way, field by field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from haul.pipelines.tracker.transform import KEY_PATTERN

Lookup = Callable[[str], str | None]  # a source name -> the target's, None when it has none

QUEUE_FIELDS = frozenset(("queue",))
USER_FIELDS = frozenset(
    ("assignee", "author", "createdby", "created by", "followers", "modifiedby", "modified by",
     "resolvedby", "resolved by", "qa engineer", "qaengineer", "owner")
)  # fmt: skip
# a clause: a field name (one word, or quoted), a colon, then its comma-separated values
_CLAUSE = re.compile(
    r'(?P<field>"[^"]+"|\b[A-Za-z]\w*)\s*:\s*'
    r'(?P<values>(?:"[^"]*"|[^\s,()"]+(?:\(\))?)(?:\s*,\s*(?:"[^"]*"|[^\s,()"]+(?:\(\))?))*)'
)
_VALUE = re.compile(r'"[^"]*"|[^\s,()"]+(?:\(\))?')


@dataclass(frozen=True)
class Rewritten:
    """A rewritten query or conditions object, and what it names that has no counterpart."""

    value: Any
    kept: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueryRewriter:
    """Rewrites queries for one target; each lookup says how one kind of name maps."""

    queue: Lookup
    issue: Lookup
    user: Lookup

    def query(self, text: str | None) -> Rewritten:
        """The query with its queues, people and issue keys as the target names them."""
        if not text:
            return Rewritten(text)
        kept: list[str] = []
        clauses = _CLAUSE.sub(lambda m: self._clause(m, kept), text)
        return Rewritten(self._keys(clauses, kept), tuple(dict.fromkeys(kept)))

    def conditions(self, conditions: dict[str, Any] | None) -> Rewritten:
        """A filter object, its queue, key and people fields rewritten."""
        if not conditions:
            return Rewritten(conditions)
        kept: list[str] = []
        rewritten = {
            name: self._condition(name.lower(), value, kept) for name, value in conditions.items()
        }
        return Rewritten(rewritten, tuple(dict.fromkeys(kept)))

    # -- one clause, one value -------------------------------------------------------------

    def _clause(self, match: re.Match[str], kept: list[str]) -> str:
        field = match.group("field").strip('"').strip().lower()
        lookup = self._lookup(field)
        if lookup is None:
            return match.group(0)
        kind, find = lookup
        values = _VALUE.sub(lambda v: self._value(v.group(0), kind, find, kept), match["values"])
        return match.group(0)[: match.start("values") - match.start()] + values

    def _lookup(self, field: str) -> tuple[str, Lookup] | None:
        if field in QUEUE_FIELDS:
            return "queue", self.queue
        if field in USER_FIELDS:
            return "user", self.user
        return None

    def _value(self, value: str, kind: str, find: Lookup, kept: list[str]) -> str:
        quoted = value.startswith('"')
        name = value.strip('"')
        if not name or name.endswith(")"):  # a function: me(), empty(), notEmpty()
            return value
        found = find(name)
        if found is None:
            kept.append(f"{kind} {name}")
            return value
        return f'"{found}"' if quoted else found

    def _keys(self, text: str, kept: list[str]) -> str:
        def key(match: re.Match[str]) -> str:
            found = self.issue(match.group(0))
            if found is None:
                kept.append(f"issue {match.group(0)}")
                return match.group(0)
            return found

        return KEY_PATTERN.sub(key, text)

    def _condition(self, field: str, value: Any, kept: list[str]) -> Any:
        if isinstance(value, list):
            return [self._condition(field, item, kept) for item in value]
        if not isinstance(value, str):
            return value
        if field == "key":
            return self._keys(value, kept)
        lookup = self._lookup(field)
        if lookup is None:
            return value
        return self._value(value, *lookup, kept)
