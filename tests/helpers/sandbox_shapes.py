"""Compare a reply of ours with a recorded live reply: key names and JSON types, recursively.

Recorded values are scrubbed placeholders, so only structure is compared.  Keys the recorder
did not model (``<unknown-N>``, ``<key-N>``) are ignored.  For an array, a key counts as
required only if every recorded item has it (items differ in optional keys).
"""

from __future__ import annotations

import json
from pathlib import Path

# facts about the live services, kept in the project so that every clone checks every shape
REPLIES = Path(__file__).resolve().parents[1] / "live_replies"


def recorded(name: str) -> dict:
    """The recorded ``{"body", "status"}`` of ``<service>/<name>.json`` (``tracker/`` when the
    name has no service), from tests/live_replies/: a shape test never skips for want of one."""
    service, _, rest = name.partition(":")
    path = REPLIES / (service if rest else "tracker") / f"{rest or name}.json"
    assert path.is_file(), (
        f"no recorded live reply {path.relative_to(REPLIES.parent)}: copy it from the recorded "
        "set (see tests/live_replies/README.md) before comparing a reply with it"
    )
    return json.loads(path.read_text(encoding="utf-8"))


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _modelled(key: str) -> bool:
    return not (key.startswith("<unknown-") or key.startswith("<key-"))


def shape_problems(ours: object, theirs: object, where: str = "$") -> list[str]:
    """Every place where ``ours`` lacks a recorded key or has another JSON type."""
    if theirs is None:
        return []
    if ours is None:
        return [f"{where}: null where the recording has {_kind(theirs)}"]
    if _kind(ours) != _kind(theirs):
        return [f"{where}: {_kind(ours)} where the recording has {_kind(theirs)}"]
    if isinstance(theirs, dict):
        assert isinstance(ours, dict)
        problems = []
        for key, value in theirs.items():
            if not _modelled(key):
                continue
            if key not in ours:
                problems.append(f"{where}.{key}: missing")
            else:
                problems += shape_problems(ours[key], value, f"{where}.{key}")
        return problems
    if isinstance(theirs, list) and theirs and ours:
        assert isinstance(ours, list)
        return shape_problems(ours[0], _common(theirs), f"{where}[0]")
    return []


def _common(items: list) -> object:
    """What every recorded item has: shared keys, recursively through nested objects."""
    if not all(isinstance(item, dict) for item in items):
        return items[0]
    shared = set.intersection(*(set(item) for item in items))
    return {key: _common([item[key] for item in items]) for key in items[0] if key in shared}


def assert_like_recording(name: str, status: int, body: object) -> None:
    reply = recorded(name)
    assert status == reply["status"], f"{name}: status {status}, recorded {reply['status']}"
    problems = shape_problems(body, reply["body"])
    assert not problems, f"{name}: " + "; ".join(problems)
