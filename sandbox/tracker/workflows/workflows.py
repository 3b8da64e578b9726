"""Workflows: which statuses an issue of a queue and type can be in, and the transitions
between them; and each queue's issue-type configuration, which says, per issue type the queue
allows, the workflow its issues follow and the resolutions they may be closed with.

A workflow is an object of its organisation (``/workflows/{id}``), shared by the queues whose
configuration names it. A transition is named by the status it leads to (``inProgress``,
``resolved``) and lists the statuses it leaves from; one into a `done` status asks for a
resolution when the issue has none (its screen), and leaving a `done` status clears it.

Seeded on first use: the source and target organisations have ``classic`` and ``kanban``; a
freshly created organisation (the "empty" one) has only ``basic``, which lacks the status
``inReview`` (a value its admins never added). A queue's configuration gives every issue type
of its organisation the ``classic`` workflow (``basic`` in a fresh organisation) and every
resolution, except where ``QUEUE_WORKFLOWS`` says otherwise: the target's ``NEW`` queue is a
kanban with a one-way end (``closed`` leaves nowhere) and ``needInfo`` reached only from
``open``, so a status some issues hold elsewhere has no path in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.model import Dictionary, Org, Queue

CREATED_IDS = 10_000  # dictionary values made through the API have ids from here on


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
    version: int = 1

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
BASIC = Workflow(  # a fresh organisation's: the classic one without the review step
    "basic",
    "Basic",
    "open",
    tuple(
        Transition(t.id, tuple(s for s in t.sources if s != "inReview"), t.display)
        for t in CLASSIC.transitions
        if t.id != "inReview"
    ),
)
SEEDED = {"source": (CLASSIC, KANBAN), "target": (CLASSIC, KANBAN), "empty": (BASIC,)}
QUEUE_WORKFLOWS = {"NEW": "kanban"}  # queue key -> workflow id; others: the org's first


def workflows_of(org: Org) -> dict[str, Workflow]:
    """The org's workflows by id, seeded on first use."""
    if not org.workflows:
        org.workflows.update({w.id: w for w in SEEDED.get(org.role, SEEDED["empty"])})
    return org.workflows


def default_workflow(org: Org) -> Workflow:
    """The workflow a queue's types follow unless its configuration names another."""
    return next(iter(workflows_of(org).values()))


TypesConfig = dict[str, tuple[str, tuple[str, ...]]]  # type key -> (workflow id, resolutions)


def types_config_of(org: Org, queue: Queue) -> TypesConfig:
    """The queue's issue-type configuration, seeded on first use from the org's seeded
    dictionaries (a value made later through the API joins a queue only when its
    configuration is updated, as in the service)."""
    found = org.queue_types.get(queue.key)
    if found is None:
        workflows = workflows_of(org)
        workflow = QUEUE_WORKFLOWS.get(queue.key, "")
        workflow = workflow if workflow in workflows else default_workflow(org).id
        resolutions = tuple(e.key for e in org.resolutions.entries if e.id < CREATED_IDS)
        found = org.queue_types[queue.key] = {
            e.key: (workflow, resolutions) for e in org.issue_types.entries if e.id < CREATED_IDS
        }
    return found


def workflow_of(org: Org, queue: str, issue_type: str = "") -> Workflow:
    """The workflow issues of type `issue_type` in `queue` follow (a type the configuration
    lacks follows the configuration's first workflow)."""
    workflows = workflows_of(org)
    found = org.queues.get(queue)
    config = types_config_of(org, found) if found is not None else {}
    entry = config.get(issue_type) or next(iter(config.values()), None)
    chosen = workflows.get(entry[0]) if entry else None
    return chosen or default_workflow(org)


def queue_workflows(org: Org, queue: Queue) -> list[tuple[Workflow, list[str]]]:
    """Each workflow the queue's configuration names, with the types that follow it."""
    by_workflow: dict[str, list[str]] = {}
    for kind, (workflow, _) in types_config_of(org, queue).items():
        by_workflow.setdefault(workflow, []).append(kind)
    workflows = workflows_of(org)
    return [(workflows[w], kinds) for w, kinds in by_workflow.items() if w in workflows]


_SHAPE = "Must be a list of {issueType, workflow, resolutions}"


def _key(dictionary: Dictionary, ref: object) -> str | None:
    if isinstance(ref, dict):
        ref = ref.get("key") or ref.get("id")
    found = dictionary.lookup(ref)
    return found.key if found else None


def parse_types_config(checks: Checks, org: Org) -> TypesConfig | None:
    """The body's ``issueTypesConfig`` checked against the org (None when not given)."""
    items = checks.body.get("issueTypesConfig")
    if items is None:
        return None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        checks.fail("issueTypesConfig", _SHAPE)
        return None
    config: TypesConfig = {}
    workflows = workflows_of(org)
    for item in items:
        kind = _key(org.issue_types, item.get("issueType"))
        if kind is None:
            checks.fail("issueTypesConfig", f"Unknown issue type {item.get('issueType')!r}")
            continue
        workflow = item.get("workflow")
        workflow = workflow.get("id") if isinstance(workflow, dict) else workflow
        if not isinstance(workflow, str) or workflow not in workflows:
            checks.fail("issueTypesConfig", f"Unknown workflow {item.get('workflow')!r}")
            continue
        resolutions = []
        for ref in item.get("resolutions") or []:
            resolution = _key(org.resolutions, ref)
            if resolution is None:
                checks.fail("issueTypesConfig", f"Unknown resolution {ref!r}")
            elif resolution not in resolutions:
                resolutions.append(resolution)
        config[kind] = (workflow, tuple(resolutions))
    return config
