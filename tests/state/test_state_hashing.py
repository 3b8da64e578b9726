"""Canonical JSON: the same text as json's sorted, compact form, whichever encoder wrote it."""

import json
import math
import random
import struct
from typing import Any

import pytest

from haul.state.hashing import canonical_json, content_hash, parse_json

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

TEXTS = ["", "a", "é😀", "1.5", ":1e5,", "null", "\\", '"', "\x00\x1f\x7f\u2028", "ж" * 3]


def json_text(value: Any) -> str:
    """What canonical JSON has always been: json's sorted, compact text, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def a_float(rng: random.Random) -> float:
    pick = rng.random()
    if pick < 0.3:  # any bit pattern: tiny, huge, subnormal, NaN, infinities
        return float(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
    if pick < 0.6:  # around the magnitudes where repr turns to an exponent
        return rng.choice([1.0, 1.5, 3.25, -7.0]) * 10.0 ** rng.randint(-8, 20)
    return rng.choice([0.0, -0.0, 0.5, 100.0, math.inf, -math.inf, math.nan])


def a_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**63, -(2**70)])
    if kind == 2:
        return a_float(rng)
    if kind in (3, 4):
        return rng.choice(TEXTS)
    if kind == 5:
        return [a_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(TEXTS) + str(n): a_value(rng, depth + 1) for n in range(rng.randrange(5))}


def test_canonical_json_is_json_sorted_compact_text_for_every_kind_of_value() -> None:
    """Records with and without floats, nulls, NaN, infinities and big integers, nested: the
    text is json's to the byte (a content hash that changed would resend every record)."""
    rng = random.Random(20261204)
    values = [a_value(rng) for _ in range(20_000)]
    values += [{"b": [1, 2.5, None], "a": "x"}, 1e-05, 1e16, [1e22], {"n": math.nan}]
    for value in values:
        assert canonical_json(value) == json_text(value), value


def test_a_record_without_floats_or_nulls_hashes_as_before() -> None:
    record = {"key": "Q-1", "summary": "Ärger: 10:30", "tags": ["a", "b"], "votes": 3}
    expected = json_text(record)
    assert canonical_json(record) == expected
    assert content_hash(record) == content_hash(parse_json(expected))


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    assert canonical_json({"a": 1, "b": "x\ud800"}) == '{"a":1,"b":"x\ufffd"}'
