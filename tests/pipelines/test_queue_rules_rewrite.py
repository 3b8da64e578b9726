"""A trigger's conditions and actions, a macro's field changes: the people, queues, issues and
queries they name are rewritten for the target as a saved filter's are; what has no
counterpart is kept as written and named."""

from __future__ import annotations

from haul.pipelines.tracker.planning.queries import QueryRewriter
from haul.pipelines.tracker.planning.queue_rules import RuleRewrite

PEOPLE = {"alice": "alice.new", "bob": "bob"}


def rewrite() -> RuleRewrite:
    return RuleRewrite(
        QueryRewriter(
            queue=lambda name: {"TEST": "NEW"}.get(name),
            issue=lambda key: key.replace("TEST-", "NEW-") if key.startswith("TEST-") else None,
            user=PEOPLE.get,
        )
    )


def test_people_in_nested_conditions_and_actions_are_mapped_and_fields_named_by_id() -> None:
    rules = rewrite()
    conditions = [
        {"type": "Or", "conditions": [
            {"type": "FieldEquals", "field": {"self": "x", "id": "assignee", "display": "A"},
             "value": "alice"},
            {"type": "FieldEquals", "field": "queue", "value": "TEST"},
        ]},
        {"type": "Query", "query": "Queue: TEST AND Assignee: bob AND Key: TEST-3"},
    ]  # fmt: skip
    actions = [
        {"type": "Set", "field": "followers", "value": ["alice", "bob"]},
        {"type": "CreateComment", "text": "alice was here"},  # text: not a person's field
    ]
    assert rules.items(conditions) == [
        {"type": "Or", "conditions": [
            {"type": "FieldEquals", "field": "assignee", "value": "alice.new"},
            {"type": "FieldEquals", "field": "queue", "value": "NEW"},
        ]},
        {"type": "Query", "query": "Queue: NEW AND Assignee: bob AND Key: NEW-3"},
    ]  # fmt: skip
    assert rules.items(actions) == [
        {"type": "Set", "field": "followers", "value": ["alice.new", "bob"]},
        {"type": "CreateComment", "text": "alice was here"},
    ]
    assert rules.kept == []


def test_a_macros_change_naming_someone_the_target_lacks_is_kept_and_named() -> None:
    rules = rewrite()
    changes = [
        {"field": "assignee", "set": "carol"},
        {"field": "followers", "add": ["alice"], "remove": ["carol"]},
        {"field": "tags", "add": ["carol"]},  # a tag, not a person
    ]
    assert rules.items(changes) == [
        {"field": "assignee", "set": "carol"},
        {"field": "followers", "add": ["alice.new"], "remove": ["carol"]},
        {"field": "tags", "add": ["carol"]},
    ]
    assert rules.kept == ["user carol", "user carol"]
