"""Canonical JSON and the content hash that staged records and ledger payloads are compared by.

A service may send a text with a lone UTF-16 surrogate (an emoji cut in half): JSON allows the
escape, UTF-8 cannot hold it. Such a record is kept, the half character replaced by U+FFFD,
and a warning logged; nothing else about it changes.
"""

import hashlib
import json
import re
from typing import Any

import msgspec
import structlog

log = structlog.get_logger(__name__)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DECODER = msgspec.json.Decoder()
# built once: json.dumps with options builds an encoder per call (a tenth of the encoding)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# msgspec writes the same text as `_CANONICAL` at an eighth of its CPU (every staged record is
# hashed), save for floats: 0.00001 where json writes 1e-05, null for NaN and the infinities.
# Its text stands for a value that holds no float: one whose MessagePack (msgspec's too, about
# as cheap) holds no 0xcb, the byte each float is written after. The same byte inside an
# integer or a string sends a value to json's text, which is the same text, only slower. (A
# look for numbers in the JSON text took the ":00." of every timestamp for a float: 12 130 of
# the small org's 12 561 records went to json; 772 do now.)
_FAST = msgspec.json.Encoder(order="sorted")
_PACKED = msgspec.msgpack.Encoder()
_FLOAT_MARK = b"\xcb"


def canonical_json(value: Any) -> str:
    """Serialise `value` so equal data gives equal text: sorted keys, no spaces, UTF-8 kept.

    The text can always be encoded as UTF-8: lone surrogates become U+FFFD.
    """
    try:
        fast = _FAST.encode(value)
        if _FLOAT_MARK not in _PACKED.encode(value):
            return fast.decode("utf-8")
    except (TypeError, ValueError, OverflowError, msgspec.MsgspecError):
        pass  # a lone surrogate, an integer past 64 bits (MessagePack's limit): json's way
    text = _CANONICAL.encode(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _LONE_SURROGATE.sub("\ufffd", text)
        log.warning("lone_surrogate_replaced", text=text[:120])
    return text


def text_hash(text: str) -> str:
    """The hex sha256 of a canonical JSON text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(value: Any) -> str:
    """Return the hex sha256 of the canonical JSON of `value` (key order does not matter)."""
    return text_hash(canonical_json(value))


def parse_json(text: str | bytes) -> Any:
    """Stored JSON text back to values, as ``json.loads`` gives them, at half its CPU (plans
    and drains read every staged record back). The text json wrote and msgspec refuses
    (NaN, Infinity) is read by json."""
    try:
        return _DECODER.decode(text)
    except msgspec.MsgspecError:
        return json.loads(text)
