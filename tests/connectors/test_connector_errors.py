"""Reading the server's own message out of each service's error body."""

from __future__ import annotations

import httpx
import pytest

from haul.connectors.errors import (
    AuthError,
    ConflictError,
    FatalError,
    HaulHTTPError,
    NotFoundError,
    RecordError,
    ScrollExpiredError,
    TransientError,
    ValidationError,
    describe_error_body,
    error_class_for_status,
)

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # tracker: messages first, then field errors
        (
            {"errors": {"summary": "too long"}, "errorMessages": ["Bad issue"], "statusCode": 422},
            "Bad issue; summary: too long",
        ),
        ({"errorMessages": ["Issue does not exist."]}, "Issue does not exist."),
        # wiki: error_code with a message list or string
        ({"error_code": "NOT_FOUND", "message": ["No page."]}, "NOT_FOUND: No page."),
        (
            {"error_code": "FORBIDDEN", "message": "no access", "debug_message": "x"},
            "FORBIDDEN: no access",
        ),
        ({"error_code": "GONE"}, "GONE"),
        # forms: detail string, or FastAPI-style lists
        ({"detail": "Survey not found"}, "Survey not found"),
        (
            {"detail": [{"loc": ["body", "name"], "msg": "field required"}]},
            "body.name: field required",
        ),
        ([{"loc": [], "error_code": "disabled", "msg": "Blocked"}], "Blocked"),
    ],
)
def test_server_message_is_read_from_each_service_shape(body, expected):
    """Tracker, wiki and forms error bodies all yield their human message."""
    assert describe_error_body(httpx.Response(400, json=body)) == expected


def test_non_json_error_falls_back_to_shortened_text():
    """An HTML or plain error page becomes one shortened line of text."""
    page = "<html>\n  <body>Bad   Gateway</body>\n</html>" + "x" * 1000
    text = describe_error_body(httpx.Response(502, text=page))
    assert text.startswith("<html> <body>Bad Gateway</body> </html>")
    assert len(text) <= 503


def test_unknown_json_shape_falls_back_to_its_text():
    """A JSON object with none of the known keys is shown as it came."""
    assert describe_error_body(httpx.Response(400, json={"oops": 1})) == '{"oops":1}'


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, AuthError),
        (403, AuthError),
        (404, NotFoundError),
        (409, ConflictError),
        (400, ValidationError),
        (413, ValidationError),
        (422, ValidationError),
        (428, ValidationError),
        (501, TransientError),
        (302, FatalError),
    ],
)
def test_status_classes(status, expected):
    """Each final status maps to the branch of the tree that says what to do."""
    assert error_class_for_status(status) is expected


def test_tree_is_rooted_and_grouped_by_action():
    """Callers can catch by action: skip a record, stop the run, or anything at all."""
    assert issubclass(ValidationError, RecordError) and issubclass(AuthError, FatalError)
    for cls in (TransientError, RecordError, FatalError, ScrollExpiredError):
        assert issubclass(cls, HaulHTTPError)


def test_context_rebuilds_the_error_as_another_class():
    """``context()`` carries service, method, url, status, message and response over."""
    response = httpx.Response(404)
    error = NotFoundError(
        "gone", service="tracker", method="POST", url="u", status=404, response=response
    )
    again = ScrollExpiredError("expired", **error.context())
    assert (again.service, again.method, again.url, again.status) == ("tracker", "POST", "u", 404)
    assert again.response is response
    assert repr(again) == "ScrollExpiredError('expired', status=404)"
