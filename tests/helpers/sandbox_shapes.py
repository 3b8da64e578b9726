"""Compare a reply of ours with a recorded live reply: key names and JSON types, recursively.

Recorded values are scrubbed placeholders, so only structure is compared.  Keys the recorder
did not model (``<unknown-N>``, ``<key-N>``) are ignored.  For an array, a key counts as
required only if every recorded item has it (items differ in optional keys).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPLIES = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "live-replies"


def recorded(name: str) -> dict:
    """The recorded ``{"body", "status"}`` of ``<service>/<name>.json`` (``tracker/`` when the
    name has no service); skip if absent."""
    service, _, rest = name.partition(":")
    path = REPLIES / (service if rest else "tracker") / f"{rest or name}.json"
    if not path.is_file():
        pytest.skip(f"recorded replies not found at {path.parent} (../shared/reference is absent)")
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
