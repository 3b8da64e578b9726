"""The workflow part of a generated issue's changelog, and the histories where tools that
measure flow disagree, seeded into some issues:

    reopened   finished, reopened, started again and finished again (resolved or closed now)
    skipped    finished straight from open, the start status skipped (resolved or closed now)
    cancelled  cancelled first, reopened, then its usual workflow (started at least once now)
    moved      its usual workflow, and a move from another queue
    renamed    its usual workflow, the start status named as it was before a rename

Which issue gets which follows its sequence number (`edge_case`), so the case of an issue
depends on its header alone; the steps of an edge case are drawn from an RNG of its own, so
the issue's other records (drawn from the issue's RNG) are the same as without it.
"""

from __future__ import annotations

import hashlib
import random

from haul.sandbox.tracker.model import FieldChange, Issue, NamedThen, Org

Draft = tuple[int, str, list[FieldChange]]  # when, entry type, changes
Step = tuple[str, str]  # (from status, to status)

EDGE_EVERY = 10  # of each ten issues in creation order, the first five may be edge cases
FINISHED = ("resolved", "closed")
RENAMED_STATUS = NamedThen("inProgress", "In work")  # inProgress's name before its rename
# transitions that follow open -> inProgress, per final status (see generate._PREVIOUS_STATUS)
TAILS: dict[str, tuple[Step, ...]] = {
    "open": (),
    "inProgress": (),
    "needInfo": (("inProgress", "needInfo"),),
    "resolved": (("inProgress", "resolved"),),
    "closed": (("inProgress", "resolved"), ("resolved", "closed")),
}


def edge_case(issue: Issue) -> str | None:
    """The edge case seeded into `issue`'s history, if any (see the module docstring)."""
    case = ("reopened", "skipped", "cancelled", "moved", "renamed")[issue.seq % EDGE_EVERY : 5]
    if not case:
        return None
    fits = {
        "reopened": issue.status in FINISHED,
        "skipped": issue.status in FINISHED,
        "cancelled": issue.status != "open",
        "moved": True,
        "renamed": issue.status != "open",
    }
    return case[0] if fits[case[0]] else None


def edge_rng(seed: int, key: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{key}:edge".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def usual_steps(issue: Issue, rng: random.Random) -> list[Step]:
    """open -> inProgress, a few needInfo loops, then the tail to its status now."""
    if issue.status == "open":
        return []
    loops = rng.randrange(0, 3) if issue.status in ("needInfo", "resolved", "closed") else 0
    steps = [("open", "inProgress")]
    steps += [("inProgress", "needInfo"), ("needInfo", "inProgress")] * loops
    return steps + list(TAILS[issue.status])


def timed(issue: Issue, steps: list[Step], rng: random.Random) -> list[Draft]:
    """`steps` as status changes: the last into resolved at resolvedAt, the last of all at
    statusStartTime, the others at random times before them; leaving a finished status
    clears the resolution."""
    if not steps:
        return []
    fixed = {len(steps) - 1: issue.status_start}
    if issue.resolved_at is not None:
        last_resolve = max(i for i, step in enumerate(steps) if step[1] == "resolved")
        fixed[last_resolve] = issue.resolved_at
    free_until = min(fixed.values())
    count = len(steps) - len(fixed)
    free = iter(sorted(rng.randrange(issue.created_at, free_until + 1) for _ in range(count)))
    drafts = []
    started = issue.created_at  # when the status being left began
    for index, (before, after) in enumerate(steps):
        when = fixed.get(index) or next(free)
        changes = [
            FieldChange("status", "statuses", before, after),
            FieldChange("statusStartTime", "time", started, when),
        ]
        if after == "resolved":
            changes.append(FieldChange("resolution", "resolutions", None, issue.resolution))
        elif before in FINISHED and after not in FINISHED:
            changes.append(FieldChange("resolution", "resolutions", issue.resolution, None))
        drafts.append((when, "IssueWorkflow", changes))
        started = when
    return drafts


def edge_workflow(org: Org, issue: Issue, case: str, rng: random.Random) -> list[Draft]:
    """The workflow drafts of an issue seeded with `case`."""
    if case == "reopened":
        steps = [("open", "inProgress"), ("inProgress", "resolved"), ("resolved", "open"),
                 ("open", "inProgress"), *TAILS[issue.status]]  # fmt: skip
        return timed(issue, steps, rng)
    if case == "skipped":
        return timed(issue, [("open", "resolved"), *TAILS[issue.status][1:]], rng)
    if case == "cancelled":
        steps = [("open", "cancelled"), ("cancelled", "open"), *usual_steps(issue, rng)]
        return timed(issue, steps, rng)
    drafts = timed(issue, usual_steps(issue, rng), rng)
    if case == "renamed":
        return [
            (when, kind, [_renamed(change) for change in changes]) for when, kind, changes in drafts
        ]
    return drafts + _moved(org, issue, rng)


def _renamed(change: FieldChange) -> FieldChange:
    if change.field != "status":
        return change
    before = RENAMED_STATUS if change.before == RENAMED_STATUS.key else change.before
    after = RENAMED_STATUS if change.after == RENAMED_STATUS.key else change.after
    return FieldChange(change.field, change.kind, before, after)


def _moved(org: Org, issue: Issue, rng: random.Random) -> list[Draft]:
    """A move from another queue (its key there far above the queue's own numbers)."""
    others = sorted(key for key in org.queues if key != issue.queue)
    if not others:
        return []
    old_queue = others[issue.seq % len(others)]
    when = rng.randrange(issue.created_at, issue.updated_at + 1)
    changes = [
        FieldChange("queue", "text", old_queue, issue.queue),
        FieldChange("key", "text", f"{old_queue}-{90_000 + issue.seq}", issue.key),
    ]
    return [(when, "IssueMoved", changes)]
