"""Transform rules: queue and key remapping, users, dictionaries, import bodies."""

from pathlib import Path

import pytest

from haul.pipelines.config.mapping_files import read_users_csv
from haul.pipelines.tracker.transform import (
    DictionaryMap,
    QueueMap,
    Transform,
    TransformError,
    UserMap,
)

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_keys_follow_their_queue_and_text_references_are_rewritten() -> None:
    """TEST-12 becomes NEW-12, in keys and inside text; other queues are left alone."""
    queues = QueueMap({"TEST": "NEW"})
    assert queues.key("TEST-12") == "NEW-12"
    assert queues.key("OPS-3") == "OPS-3"
    text = "See TEST-12 and OPS-3, not XTEST-1; ссылка TEST-7."
    assert queues.rewrite(text) == "See NEW-12 and OPS-3, not XTEST-1; ссылка NEW-7."


def test_users_csv_then_same_login_then_default(tmp_path: Path) -> None:
    """Mapping file first, then the same login in the target, then the default (remembered)."""
    csv_path = tmp_path / "users.csv"
    csv_path.write_text("source,target\nalice,alice.new\n", encoding="utf-8")
    users = UserMap(
        source_logins={"1": "alice", "2": "bob", "3": "carol"},
        target_logins={"alice.new", "bob"},
        explicit=read_users_csv(csv_path),
        default="robot",
    )
    assert users.login({"id": "1", "display": "Alice"}) == "alice.new"
    assert users.login({"id": "2"}) == "bob"
    assert users.login({"id": "3", "display": "Carol C"}) == "robot"
    assert users.unmapped == {"carol (Carol C)"}


def test_unmapped_user_without_default_is_a_record_error() -> None:
    users = UserMap(source_logins={"3": "carol"}, target_logins=set())
    with pytest.raises(TransformError, match="carol"):
        users.login({"id": "3"})


def test_dictionaries_map_by_key_and_report_missing_keys() -> None:
    """Source ids are mapped through keys to the target's ids; absent keys are listed."""
    dictionaries = DictionaryMap(
        source_keys={"status": {"1": "open", "2": "closed"}},
        target_ids={"status": {"open": 101}},
    )
    assert dictionaries.target_id("status", {"id": "1"}) == 101
    assert dictionaries.target_id("status", {"id": "9", "key": "open"}) == 101
    issues = [{"status": {"id": "2", "key": "closed"}}, {"status": {"id": "1"}}]
    assert dictionaries.missing(issues) == {"status": ["closed"]}


def test_issue_body_carries_the_final_state() -> None:
    """The import body keeps dates and authors, maps ids, remaps key and text, adds unique."""
    transform = Transform(
        queues=QueueMap({"TEST": "NEW"}),
        users=UserMap({"1": "alice"}, {"alice"}),
        dictionaries=DictionaryMap(
            {},
            {
                "status": {"closed": 5},
                "issuetype": {"bug": 6},
                "priority": {"normal": 7},
                "resolution": {"fixed": 8},
            },
        ),
        unique_prefix="haul:42",
    )
    alice = {"id": "1", "display": "Alice"}
    issue = {
        "key": "TEST-3",
        "queue": {"key": "TEST"},
        "summary": "Сломалось 🙂",
        "description": "dup of TEST-1",
        "createdAt": "2024-01-01T00:00:00.000+0000",
        "createdBy": alice,
        "updatedAt": "2024-02-01T00:00:00.000+0000",
        "updatedBy": alice,
        "status": {"key": "closed"},
        "type": {"key": "bug"},
        "priority": {"key": "normal"},
        "resolution": {"key": "fixed"},
        "resolvedAt": "2024-01-15T00:00:00.000+0000",
        "resolvedBy": alice,
        "tags": ["a"],
        "assignee": alice,
        "followers": [alice],
    }
    body = transform.issue_body(issue)
    assert body == {
        "queue": "NEW",
        "key": "NEW-3",
        "summary": "Сломалось 🙂",
        "createdAt": "2024-01-01T00:00:00.000+0000",
        "createdBy": "alice",
        "unique": "haul:42:TEST-3",
        "updatedAt": "2024-02-01T00:00:00.000+0000",
        "updatedBy": "alice",
        "status": 5,
        "type": 6,
        "priority": 7,
        "resolution": 8,
        "resolvedAt": "2024-01-15T00:00:00.000+0000",
        "resolvedBy": "alice",
        "description": "dup of NEW-1",
        "tags": ["a"],
        "assignee": "alice",
        "followers": ["alice"],
    }


def test_link_body_uses_the_relationship_of_its_side() -> None:
    transform = Transform(
        QueueMap({"TEST": "NEW"}), UserMap({"1": "a"}, {"a"}), DictionaryMap({}, {}), "p"
    )
    link = {
        "type": {"id": "subtask"},
        "direction": "outward",
        "object": {"key": "TEST-9"},
        "createdAt": "2024-01-01T00:00:00.000+0000",
        "createdBy": {"id": "1"},
    }
    assert transform.link_body(link)["relationship"] == "is parent task for"
    assert transform.link_body(link)["issue"] == "NEW-9"
    with pytest.raises(TransformError):
        transform.link_body({**link, "type": {"id": "blocks"}})
