"""JSON bodies decoded as ``json.loads`` decodes them, at half its CPU; and what is wrong
with a body that is not JSON, in a person's words (`json_problem`).

A drain decodes every listing page and a load every reply; msgspec's decoder takes half the
CPU of json's for the same values. What msgspec refuses and json accepts (NaN, a lone
surrogate escape, a number past float range, UTF-16, a byte order mark) goes to json, so no
reply decodes differently or fails where it did not.
"""

import json
from typing import Any

import msgspec

_DECODER = msgspec.json.Decoder()


def decode_json(content: bytes | str) -> Any:
    """The JSON text as Python values; ValueError (or UnicodeDecodeError) when it is not JSON."""
    try:
        return _DECODER.decode(content)
    except msgspec.MsgspecError:
        return json.loads(content)


def json_problem(content: bytes, content_type: str, error: Exception) -> str:
    """Why a reply is not the JSON it should be, as a person says it: not JSON at all (and
    what it is instead), JSON that breaks off (cut short on the way), or damaged JSON."""
    kind = content_type.split(";")[0].strip() or "no content type"
    if "json" not in kind:
        return f"the reply is not JSON but {kind}"
    if not isinstance(error, json.JSONDecodeError):
        return f"the reply is not valid JSON text ({type(error).__name__})"
    size = len(content)
    if error.pos >= size - 1 or error.msg.startswith("Unterminated"):
        return f"the JSON reply breaks off after {size} bytes: it was cut short on the way"
    return f"the reply is damaged JSON ({error.msg.lower()} at byte {error.pos} of {size})"
