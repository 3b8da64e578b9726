"""Which tracker writes notify people: the sandbox counts each one sent with notifications on.

An ordinary write to an issue or an entity (what people follow) notifies its watchers. The
spec lets a caller turn that off (`notify=false`) on some calls only: creating an issue,
moving one, bulk changes and the entity family's writes (`TAKES_NOTIFY`); any other write to
an issue notifies whatever it asks. Admin imports, searches and listings sent as POST notify
no one. The count is by ``"METHOD /route/{template}"``, from the route the request matched.
"""

from __future__ import annotations

from urllib.parse import parse_qs

# route templates (below the version) whose writes take `notify`, as the spec lists them
TAKES_NOTIFY = (
    "/issues",
    "/issues/{key}/_move",
    "/bulkchange/",
    "/entities/",
)
# path segments of writes that notify no one: admin imports, searches, listings
_SILENT = ("_import", "_search", "_count", "_findByUnique", "_clear", "_list", "_relative")
_WRITES = ("POST", "PATCH", "PUT", "DELETE")
_FOLLOWED = ("/issues", "/entities/", "/bulkchange/")


def notifies(route: str, query: bytes | str) -> bool:
    """Whether the write `route` ("PATCH /v3/issues/{key}") with this query notifies people."""
    method, _, path = route.partition(" ")
    below = "/" + path.lstrip("/").partition("/")[2]  # the path below /v3 or /v2
    if method not in _WRITES or not below.startswith(_FOLLOWED):
        return False
    if any(segment.startswith(_SILENT) for segment in below.split("/")):
        return False
    if not _takes_notify(below):
        return True
    text = query.decode("latin-1") if isinstance(query, bytes) else query
    asked = parse_qs(text).get("notify", ["true"])[-1]
    return asked.lower() != "false"


def _takes_notify(below: str) -> bool:
    return any(
        below == template if not template.endswith("/") else below.startswith(template)
        for template in TAKES_NOTIFY
    )
