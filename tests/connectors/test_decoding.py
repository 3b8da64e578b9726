"""JSON replies decode exactly as json.loads decodes them, whichever decoder does the work."""

import json
import math

import pytest

from haul.connectors.decoding import decode_json

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

TEXTS = [
    '{"key": "TEST-1", "summary": "Ünïcode ✓ 🎉", "votes": 0, "spent": null, "tags": []}',
    '[{"id": 123456789012345678901234567890}, {"id": -9223372036854775809}]',  # past int64
    '{"ratio": 0.1, "big": 1.5e300, "small": 1e-7, "neg": -0.0, "exp": 1E5}',
    '{"text": "half an emoji \\ud83d here"}',  # a lone surrogate escape
    '{"a": 1, "a": 2}',  # the last of a repeated key wins
    "  [1, 2]  ",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_reply_decodes_to_what_json_loads_gives(text: str) -> None:
    assert decode_json(text.encode()) == json.loads(text)
    assert decode_json(text) == json.loads(text)


def test_what_only_json_accepts_still_decodes() -> None:
    """NaN, a number past float range, UTF-16 and a byte order mark: json's reading of them."""
    assert math.isnan(decode_json(b'{"x": NaN}')["x"])
    assert decode_json(b"[1e400]") == [math.inf]
    assert decode_json('{"a": "é"}'.encode("utf-16")) == {"a": "é"}
    assert decode_json(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}


@pytest.mark.parametrize("body", [b"<html>Bad gateway</html>", b'{"a": ', b"\xff\xfe\xfa"])
def test_what_is_not_json_raises_value_error(body: bytes) -> None:
    with pytest.raises(ValueError):
        decode_json(body)


def test_json_problem_says_what_the_reply_is_instead() -> None:
    """Not JSON at all, JSON cut short, JSON damaged in the middle: three different lines."""
    import json

    import pytest

    from haul.connectors.decoding import json_problem

    def error(text: str) -> json.JSONDecodeError:
        with pytest.raises(json.JSONDecodeError) as caught:
            json.loads(text)
        return caught.value

    page = "<html>Login</html>"
    assert json_problem(page.encode(), "text/html; charset=utf-8", error(page)) == (
        "the reply is not JSON but text/html"
    )
    cut = '{"key": "TEST-1", "summary": "abc'
    assert "breaks off after 33 bytes" in json_problem(cut.encode(), "application/json", error(cut))
    damaged = '{"key": "TEST-1",, "summary": "abc"}'
    assert json_problem(damaged.encode(), "application/json", error(damaged)).startswith(
        "the reply is damaged JSON (expecting property name enclosed in double quotes at byte 17"
    )
