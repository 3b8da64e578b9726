"""Canonical JSON and the content hash that staged records and ledger payloads are compared by."""

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialise `value` so equal data gives equal text: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any) -> str:
    """Return the hex sha256 of the canonical JSON of `value` (key order does not matter)."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
