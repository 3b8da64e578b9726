"""What the ``"Have Links To Queue"`` condition sees of an issue's links.

The condition matches an issue with a link of any type to an issue of one of the named queues
(the service's query-filter documentation). A link whose other end sits in a queue the caller
may not read is not seen by the search: the issue is found only through its other links,
which is why a client that trusts the condition must audit it. The ``links_missed`` fault
makes the search miss a share of the issues it should find (see `sandbox.faults`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from starlette.requests import Request

from haul.sandbox.tracker.api.context import Call
from haul.sandbox.tracker.model import Issue
from haul.sandbox.tracker.structure.queue_access import may_read


def linked_queues_of(request: Request, call: Call) -> Callable[[Issue], set[str]]:
    """Per issue, the queues its links reach that the caller may read (none for a missed one)."""
    fault = request.app.state.faults.served("links_missed")
    missed = fault.rate if fault is not None else 0.0

    def readable(queue: str) -> bool:
        return call.admin or may_read(call.org, queue, call.user)

    def linked_queues(issue: Issue) -> set[str]:
        if missed and _share(issue.key) < missed:
            return set()
        queues = set()
        for link in call.org.links_of(issue.key):
            other = call.org.issues.get(link.target if link.source == issue.key else link.source)
            if other is not None and readable(other.queue):
                queues.add(other.queue)
        return queues

    return linked_queues


def _share(key: str) -> float:
    """A stable number in [0, 1) for an issue key: the same issues are missed every time."""
    digest = hashlib.sha256(f"links_missed:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
