"""Workflows: which statuses an issue of a queue and type can be in, and the transitions
between them.

A transition is named by the status it leads to (``inProgress``, ``resolved``) and lists the
statuses it leaves from; one into a `done` status asks for a resolution when the issue has
none (its screen), and leaving a `done` status clears it. Every queue follows ``classic``
except where ``QUEUE_WORKFLOWS`` says otherwise: the target's ``NEW`` queue is a kanban with
a one-way end (``closed`` leaves nowhere) and ``needInfo`` reached only from ``open``, so a
status some issues hold elsewhere has no path in it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Transition:
    id: str  # the key of the status it leads to
    sources: tuple[str, ...]  # statuses it leaves from
    display: str


@dataclass(frozen=True, slots=True)
class Workflow:
    id: str
    name: str
    initial: str
    transitions: tuple[Transition, ...]

    @property
    def statuses(self) -> tuple[str, ...]:
        """Every status of the workflow, the initial first."""
        found = [self.initial]
        for transition in self.transitions:
            found += [s for s in (*transition.sources, transition.id) if s not in found]
        return tuple(found)

    def available(self, status: str) -> list[Transition]:
        """The transitions an issue in `status` may execute."""
        return [t for t in self.transitions if status in t.sources and t.id != status]


def _t(to: str, display: str, *sources: str) -> Transition:
    return Transition(to, sources, display)


CLASSIC = Workflow(
    "classic",
    "Classic",
    "open",
    (
        _t("inProgress", "Start progress", "open", "needInfo", "inReview", "resolved"),
        _t("needInfo", "Ask for information", "open", "inProgress", "inReview"),
        _t("inReview", "Send to review", "inProgress"),
        _t("resolved", "Resolve", "open", "inProgress", "needInfo", "inReview"),
        _t("closed", "Close", "open", "inProgress", "needInfo", "resolved"),
        _t("open", "Reopen", "inProgress", "needInfo", "inReview", "resolved", "closed"),
    ),
)
KANBAN = Workflow(
    "kanban",
    "Kanban",
    "open",
    (
        _t("needInfo", "Ask for information", "open"),
        _t("inProgress", "Start progress", "open", "needInfo", "resolved"),
        _t("open", "Back to the queue", "needInfo"),
        _t("resolved", "Resolve", "inProgress"),
        _t("closed", "Close", "resolved"),
    ),
)
WORKFLOWS = {workflow.id: workflow for workflow in (CLASSIC, KANBAN)}
QUEUE_WORKFLOWS = {"NEW": "kanban"}  # queue key -> workflow id; others: classic


def workflow_of(queue: str, issue_type: str = "") -> Workflow:
    """The workflow issues of `queue` (of any type, in this sandbox) follow."""
    return WORKFLOWS[QUEUE_WORKFLOWS.get(queue, CLASSIC.id)]
