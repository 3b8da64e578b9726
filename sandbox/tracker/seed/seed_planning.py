"""Seed the source organisation's planning layer deterministically, tied to its issues and
queues; the target and empty organisations start without one.

Drawn on first access (see :func:`sandbox.tracker.planning.planning.planning_of`) from an RNG of its own
and from the generated issues only (in creation order), so reads and imports before it change
nothing.  What the source holds:

- portfolios: ``Platform`` with ``Customer experience`` under it;
- projects: one per queue, each under a portfolio (one also in a second portfolio), linked to
  some of its queue's issues, with comments, a checklist, sometimes a file; the first is
  team-only, shared with the engineering group and a person; one project depends on another;
- goals: two top goals, each with sub-goals (one two levels deep), projects working towards
  them; the second led by the security group and team-only (others neither see nor edit it);
- saved filters naming queues; a dashboard with a cycle-time widget over the first filter's
  query; two autoactions on the first queue, with run logs over issues the query matches;
- remote links on about one issue in six, drawn per issue on the first read of its list.
"""

from __future__ import annotations

import random

from haul.sandbox.groups import groups_of
from haul.sandbox.timefmt import format_ms, parse_instant
from haul.sandbox.tracker.blobs import GeneratedBlob
from haul.sandbox.tracker.entities import entities as rules
from haul.sandbox.tracker.entities import entity_history as history
from haul.sandbox.tracker.entities import entity_links as links
from haul.sandbox.tracker.entities.entity_access import apply_edit
from haul.sandbox.tracker.model import Issue, Org
from haul.sandbox.tracker.planning.planning import (
    ID_BAND,
    AutoAction,
    AutoActionRun,
    Dashboard,
    Entity,
    EntityChecklistItem,
    Planning,
    RemoteLink,
    RunOutcome,
    SavedFilter,
    StoredFile,
    Widget,
    attach_seeder,
)
from haul.sandbox.tracker.search.query import parse_body

START = parse_instant("2022-01-01T00:00:00.000+0000") or 0
END = parse_instant("2025-01-01T00:00:00.000+0000") or 0
DAY = 86_400_000
_PROJECT_NAMES = ("Launch {q}", "{q}: reliability", "{q} roadmap", "{q} migration")
_GOALS = (
    ("Grow active customers by 20%", ("Halve onboarding time", "Self-service billing")),
    ("Ship a stable platform", ("99.9% uptime", "Zero P1 incidents")),
)
_COMMENTS = ("Status: on track.", "Риски: сроки интеграции.", "Weekly sync moved to Thursday 🗓")
_CHECKS = ("Kick-off", "Design review", "Beta", "Launch", "Retrospective")


def seed_planning(org: Org) -> None:
    """Attach the seeder: the source gets its planning layer on first access, others none."""
    if org.role == "source":
        attach_seeder(org, _seed)


def _seed(org: Org, planning: Planning) -> None:
    rng = random.Random(f"planning:{org.seed}")
    planning.id_rng = rng
    issues = sorted((i for i in org.issues.values() if i.generated), key=lambda i: i.seq)
    people = sorted(org.users)
    planning.next_ids["remotelink"] = planning.band * ID_BAND + (len(issues) + 2) * 4
    planning.remote_links_factory = _remote_links
    portfolios = _portfolios(org, planning, people, rng)
    projects = _projects(org, planning, issues, people, portfolios, rng)
    _goals(org, planning, projects, people, rng)
    _filters_and_dashboard(org, planning, people, rng)
    _autoactions(org, planning, issues, rng)
    planning.id_rng = None


def _when(rng: random.Random, lo: int = START, hi: int = END - 60 * DAY) -> int:
    return rng.randrange(lo, hi)


def _entity(org: Org, planning: Planning, kind: str, fields: dict, by: int, at: int) -> Entity:
    return rules.create_entity(org, planning, kind, fields, by, at, created_by=by)


def _portfolios(
    org: Org, planning: Planning, people: list[int], rng: random.Random
) -> list[Entity]:
    top = _entity(org, planning, "portfolio", {"summary": "Platform"}, people[0], START)
    fields = {"summary": "Customer experience", "parent": top.id, "lead": people[1]}
    return [top, _entity(org, planning, "portfolio", fields, people[1], START + DAY)]


def _projects(
    org: Org,
    planning: Planning,
    issues: list[Issue],
    people: list[int],
    portfolios: list[Entity],
    rng: random.Random,
) -> list[Entity]:
    projects = []
    for n, queue in enumerate(org.queues):
        at = _when(rng)
        fields = {
            "summary": rng.choice(_PROJECT_NAMES).format(q=org.queues[queue].name),
            "description": f"Work of the {queue} queue, tracked as a project.",
            "lead": rng.choice(people),
            "entityStatus": rng.choice(rules.STATUSES["project"]),
            "parentEntity": {
                "primary": portfolios[n % 2].id,
                "secondary": [portfolios[0].id] if n == 1 else [],
            },
            "teamUsers": rng.sample(people, 3),
            "tags": rng.sample(["q1", "q2", "okr", "infra", "ux"], 2),
            "start": format_ms(at),
            "end": format_ms(at + rng.randrange(60, 240) * DAY),
        }
        project = _entity(org, planning, "project", fields, rng.choice(people), at)
        mine = [issue for issue in issues if issue.queue == queue]
        _project_records(org, planning, project, mine, people, rng, at)
        projects.append(project)
    if len(projects) > 1:
        spec = {"relationship": "depends on", "entity": projects[0].id}
        links.add_link(org, planning, projects[1], spec, people[0], END - 50 * DAY)
    _share(org, projects[0], "engineering", "frank")
    return projects


def _project_records(
    org: Org,
    planning: Planning,
    project: Entity,
    mine: list[Issue],
    people: list[int],
    rng: random.Random,
    at: int,
) -> None:
    """Links to some of the project's queue's issues (``mine``), comments, checklist, a file."""
    for issue in rng.sample(mine, min(len(mine), rng.randrange(3, 9))):
        spec = {"relationship": "relates", "issue": issue.key}
        links.add_link(org, planning, project, spec, rng.choice(people), at + DAY)
    for n in range(rng.randrange(0, 4)):
        text = rng.choice(_COMMENTS)
        history.add_comment(planning, project, text, (), rng.choice(people), at + (n + 2) * DAY)
    for n, text in enumerate(_CHECKS[: rng.randrange(0, len(_CHECKS) + 1)]):
        item_id = history.new_hex_id(planning, "checklist")
        deadline = at + (n + 1) * 30 * DAY
        item = EntityChecklistItem(item_id, text, n < 2, rng.choice(people), deadline)
        project.checklist.append(item)
    if rng.random() < 0.5:
        token = f"planning-file:{org.seed}:{project.id}"
        blob = GeneratedBlob(token, rng.randrange(2_000, 40_000), "application/pdf")
        file_id = history.new_hex_id(planning, "file")
        name = f"{project.summary[:20]} plan.pdf"
        stored = StoredFile(file_id, name, "application/pdf", blob, project.author, at + DAY)
        project.attachments.append(stored)


def _share(org: Org, project: Entity, group: str, reader: str | None = None) -> None:
    """Make the entity team-only, readable by ``group`` (and ``reader``) beside its team."""
    holders: dict[str, list] = {"groups": [groups_of(org).named(group).id]}
    user = org.find_user(reader) if reader else None
    if user is not None:
        holders["users"] = [user.uid]
    project.team_access = True
    apply_edit(org, project, {"grant": {"READ": holders}})


def _goals(
    org: Org, planning: Planning, projects: list[Entity], people: list[int], rng: random.Random
) -> None:
    for n, (summary, subgoals) in enumerate(_GOALS):
        at = START + (n + 1) * 30 * DAY
        status = {"entityStatus": "according_to_plan", "lead": rng.choice(people)}
        author = people[0]
        if n == 1:  # a goal the security group leads, hidden from everyone else
            status["lead"], author = _uid(org, "eve"), _uid(org, "trent")
        top = _entity(org, planning, "goal", {"summary": summary, **status}, author, at)
        if n == 1:
            _share(org, top, "security")
        parent = top
        for depth, name in enumerate(subgoals):
            fields = {"summary": name, "parent": (top if depth == 0 else parent).id}
            parent = _entity(org, planning, "goal", fields, rng.choice(people), at + DAY)
        for project in projects[n :: len(_GOALS)]:
            spec = {"relationship": "works towards", "entity": top.id}
            links.add_link(org, planning, project, spec, rng.choice(people), at + 2 * DAY)


def _uid(org: Org, login: str) -> int:
    user = org.find_user(login)
    assert user is not None  # every org has the catalog's people
    return user.uid


def _filters_and_dashboard(
    org: Org, planning: Planning, people: list[int], rng: random.Random
) -> None:
    queries = []
    for queue in org.queues:
        queries.append((f"{queue}: open work", f"Queue: {queue} AND Status: open, inProgress"))
    queries.append(("Urgent bugs", "Type: bug AND Priority: blocker, critical"))
    for name, query in queries:
        at = _when(rng)
        found = SavedFilter(planning.take("filter"), name, rng.choice(people), at, query)
        planning.filters[found.id] = found
    first = planning.filters[min(planning.filters)]
    owner = people[0]
    board = Dashboard(planning.take("dashboard"), "Delivery", "two-columns", owner, owner, START)
    widget = Widget(
        planning.take("widget"),
        board.id,
        "Cycle time: in progress to done",
        first.query,
        ("inProgress",),
        ("resolved", "closed"),
        "common-lines",
        owner,
        START + DAY,
    )
    board.widgets.append(widget)
    planning.dashboards[board.id] = board


def _autoactions(org: Org, planning: Planning, issues: list[Issue], rng: random.Random) -> None:
    queue = next(iter(org.queues))
    specs = (
        ("Close stale issues", f"Queue: {queue} AND Status: needInfo", "Transition"),
        ("Ping unassigned", f"Queue: {queue} AND Status: open", "Update"),
    )
    for name, query, action in specs:
        selection = parse_body({"query": query})
        matched = [i.key for i in issues if selection.matches(i)][:40]
        created = _when(rng, START, START + 90 * DAY)
        auto = AutoAction(
            id=planning.take("autoaction"),
            queue=queue,
            name=name,
            actions=[{"type": action, "status": {"key": "closed"}}]
            if action == "Transition"
            else [{"type": action, "update": [{"field": "tags", "add": ["stale"]}]}],
            created_at=created,
            updated_at=created,
            query=query,
        )
        for run in range(3):
            launched = END - (3 - run) * 7 * DAY
            picked = rng.sample(matched, min(len(matched), rng.randrange(0, 6)))
            outcomes = tuple(
                RunOutcome(key, "failure" if rng.random() < 0.1 else "success") for key in picked
            )
            run_id = f"{rng.getrandbits(96):024x}"
            auto.runs.append(AutoActionRun(run_id, launched, len(matched), outcomes))
        planning.autoactions[auto.id] = auto


def _remote_links(org: Org, key: str) -> list[RemoteLink]:
    """A generated issue's remote links, from its own RNG (any order of first reads)."""
    issue = org.issues[key]
    rng = random.Random(f"remotelinks:{org.seed}:{key}")
    if rng.random() >= 1 / 6:
        return []
    people = sorted(org.users)
    apps = ("ru.yandex.github", "ru.yandex.gitlab", "ru.yandex.jenkins")
    links: list[RemoteLink] = []
    for n in range(rng.randrange(1, 3)):
        app = rng.choice(apps)
        object_key = {
            "ru.yandex.github": f"acme/{issue.queue.lower()}/pull/{rng.randrange(1, 5000)}",
            "ru.yandex.gitlab": f"platform/{issue.queue.lower()}/-/merge_requests/{n + 1}",
            "ru.yandex.jenkins": f"deploy-{issue.queue.lower()}/{rng.randrange(1, 900)}",
        }[app]
        at = rng.randrange(issue.created_at, issue.updated_at + 1)
        if any((link.application, link.key) == (app, object_key) for link in links):
            continue  # an issue links to an object once (a second create is a 409)
        link_id = (issue.seq + 1) * 4 + n
        links.append(
            RemoteLink(link_id, key, app, object_key, "relates", "outward", rng.choice(people), at)
        )
    return links
