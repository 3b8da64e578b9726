"""A queue's triggers and macros: the model, the seed, and the trigger firings the sandbox counts.

A trigger (``/queues/{queue}/triggers``) has a name, ``conditions`` (a list of condition
objects, each with a ``type``; ``Or``/``And`` nest more under ``conditions``), ``actions`` (a
non-empty list of objects with a ``type``), ``active`` and an optimistic-lock ``version``. A
macro (``/queues/{queue}/macros``) has a name, a comment ``body`` and ``fieldChanges`` (a list
of ``{field, set | add | remove}``); it has no version (the official SDK's collection names
none). Both are kept as sent (a ``Transition`` action's status by its key): a condition, action or field change names fields by id (a
global field, or a queue's local field by its key) and people by login, as the service's own
editor writes them.

The source organisation has three triggers (one switched off) and two macros on every queue,
the same for every seed, naming system fields, a global and a local field and a person; the
target and empty organisations start with none.

The sandbox does not run a trigger's actions, but it counts its firings: every issue created
or imported into a queue while one of its active triggers listens for ``Event.create`` counts
one firing of that trigger (``GET /_sandbox/queues/{queue}/triggers/firings``), so a test can
tell that a load fired nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from haul.sandbox.tracker.model import Org

ID_START = {"source": 1, "target": 1001, "empty": 2001}


@dataclass
class Trigger:
    id: int
    queue: str
    name: str
    actions: list[dict[str, Any]]
    conditions: list[dict[str, Any]]
    active: bool = True
    version: int = 1


@dataclass
class Macro:
    id: int
    queue: str
    name: str
    body: str | None = None
    field_changes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class QueueRules:
    """One organisation's triggers and macros, and how often each trigger fired."""

    next_id: int
    triggers: dict[int, Trigger] = field(default_factory=dict)
    macros: dict[int, Macro] = field(default_factory=dict)
    firings: Counter[int] = field(default_factory=Counter)

    def take(self) -> int:
        value, self.next_id = self.next_id, self.next_id + 1
        return value

    def of_queue(self, queue: str) -> tuple[list[Trigger], list[Macro]]:
        return (
            [t for t in self.triggers.values() if t.queue == queue],
            [m for m in self.macros.values() if m.queue == queue],
        )

    def fire_on_create(self, queue: str) -> None:
        """An issue was created in ``queue``: each active trigger listening for it fires."""
        for trigger in self.triggers.values():
            if trigger.queue == queue and trigger.active and _listens(trigger.conditions):
                self.firings[trigger.id] += 1


def _listens(conditions: list[dict[str, Any]]) -> bool:
    return any(
        c.get("type") == "Event.create" or _listens(c.get("conditions") or [])
        for c in conditions
        if isinstance(c, dict)
    )


_ATTRIBUTE = "queue_rules"


def rules_of(org: Org) -> QueueRules:
    """The org's triggers and macros, seeded on first access for the source organisation
    (kept as an attribute of its own, as the planning layer is)."""
    state = vars(org)
    found = state.get(_ATTRIBUTE)
    if found is None:
        found = state[_ATTRIBUTE] = QueueRules(ID_START.get(org.role, 3001))
        if org.role == "source":
            _seed(org, found)
    return found


def _seed(org: Org, rules: QueueRules) -> None:
    """Three triggers and two macros per queue, from fixed tables (no RNG: other seeded
    counts stay as they were)."""
    people = sorted(user.login for user in org.users.values())
    for n, queue in enumerate(sorted(org.queues)):
        person = people[n % len(people)]
        for name, conditions, actions, active in _triggers(person):
            trigger = Trigger(rules.take(), queue, name, actions, conditions, active)
            rules.triggers[trigger.id] = trigger
        for name, body, changes in _macros(person):
            macro = Macro(rules.take(), queue, name, body, changes)
            rules.macros[macro.id] = macro


def _triggers(person: str) -> list[tuple[str, list[dict], list[dict], bool]]:
    return [
        (
            "Assign new bugs",
            [{"type": "Event.create"}, {"type": "FieldEquals", "field": "type", "value": "bug"}],
            [{"type": "Set", "field": "assignee", "value": person}],
            True,
        ),
        (
            "Escalate production",
            [{"type": "FieldEquals", "field": "environment", "value": "prod"}],
            [
                {"type": "Set", "field": "severity", "value": "S1"},
                {"type": "CreateComment", "text": "Escalated: production issue", "fromRobot": True},
            ],
            True,
        ),
        (
            "Reopen on comment",
            [{"type": "Or", "conditions": [{"type": "Event.comment-create"}]}],
            [{"type": "Transition", "status": "open"}],
            False,
        ),
    ]


def _macros(person: str) -> list[tuple[str, str | None, list[dict]]]:
    return [
        (
            "Need info",
            "Please add the steps to reproduce.",
            [{"field": "tags", "add": ["needinfo"]}, {"field": "assignee", "set": person}],
        ),
        (
            "Budget review",
            None,
            [{"field": "budget", "set": 1000}, {"field": "customerName", "set": "ACME"}],
        ),
    ]
