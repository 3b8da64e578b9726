"""Seed the sandbox wiki from ``(seed, size)``: page trees in the source org, an empty target.

Each tree is a root with sections several levels deep. Page text is markdown with links to
other pages of the tree (by absolute slug, and relative: ``./child``, ``child``, ``../``,
``../sibling``), to the page's own attachments and to issue keys of the source tracker. Some
pages carry attachments (one larger than an upload part at every size), grids of every column
type and comment threads with replies. Times are spread over years; authors are the org's
users. Deterministic for a seed.

Beside the random trees, at every size, fixed pages under the first two roots carry access
restrictions (:data:`RESTRICTED`): an HR space, pages open to one group, a page shut to the
plain user, pages that stop inheriting. They are drawn from an RNG of their own, after the
trees, so the trees' pages, ids and bytes are those of a seed without them.
"""

from __future__ import annotations

import random
import uuid

from haul.sandbox.groups import ALL_STAFF, groups_of
from haul.sandbox.people import USER_LOGIN, User
from haul.sandbox.tracker.model import Org
from haul.sandbox.web import web_urls
from haul.sandbox.wiki.access import Entry, Policy
from haul.sandbox.wiki.model import (
    PART_MIN,
    Attachment,
    Column,
    Comment,
    Grid,
    Page,
    Row,
    WikiOrg,
    WikiWorld,
)
from haul.sandbox.world import World

# size -> (trees, pages per tree, big attachments)
SIZES = {"tiny": (2, 7, 1), "small": (3, 20, 2), "medium": (4, 150, 3), "large": (5, 600, 4)}
ROOTS = ("team/handbook", "team/runbooks", "eng/design", "ops/oncall", "hr/policies")
TOPICS = ("setup", "deploy", "review", "release", "backup", "access", "alerts", "budget", "travel")
YEAR_MS = 365 * 24 * 3600 * 1000
START_MS = 1_577_836_800_000  # 2020-01-01
# slug, owner, access type, entries (holder kind, group name or login, role, inheritance):
# the plain user reads engineering, engineering/oncall, hr/holidays and shared, none of the rest
RESTRICTED = (
    ("team/handbook/hr", "heidi", "custom", (("group", "hr", "editor", "inherited"),)),
    ("team/handbook/hr/salaries", "judy", "inherited", ()),
    ("team/handbook/hr/reviews", "olga", "inherited", (("user", "peggy", "editor", "inherited"),)),
    ("team/handbook/hr/holidays", "heidi", "custom", (("group", ALL_STAFF, "reader", "inherited"),)),
    ("team/handbook/engineering", "bob", "custom", (("group", "engineering", "reader", "inherited"),
                                                    ("user", "carol", "author", "inherited"))),
    ("team/handbook/engineering/oncall", "dave", "inherited", ()),
    ("team/handbook/security", "eve", "custom", (("group", "security", "editor", "inherited"),)),
    ("team/handbook/security/incidents", "mallory", "inherited", ()),
    ("team/handbook/offsite", "grace", "custom", (("group", "everyone-else", "reader", "inherited"),)),
    ("team/runbooks/private-notes", "frank", "custom", (("user", "dave", "reader", "not_inherited"),)),
    ("team/runbooks/private-notes/draft", "frank", "inherited", ()),
    ("team/runbooks/shared", "bob", "custom", (("user", USER_LOGIN, "reader", "not_inherited"),
                                               ("group", "finance", "reader", "inherited"))),
    ("team/runbooks/shared/details", "bob", "inherited", ()),
)  # fmt: skip
# pages of RESTRICTED that also carry a file, a grid and comments
FURNISHED = ("team/handbook/hr/salaries", "team/handbook/engineering/oncall")


def roots_for(size: str) -> list[str]:
    """The roots of the trees seeded at `size` (the sandbox's JSON line lists them)."""
    return list(ROOTS[: SIZES.get(size, SIZES["tiny"])[0]])


def build_wiki(world: World) -> WikiWorld:
    """Every org's wiki: the source's seeded, the others empty."""
    orgs = {org_id: WikiOrg(groups_of(org)) for org_id, org in world.orgs.items()}
    source = world.org_by_role("source")
    _seed(orgs[source.id], source, random.Random(f"wiki:{world.seed}"), world.size)
    _seed_restricted(orgs[source.id], source, random.Random(f"wiki-access:{world.seed}"))
    _refer(orgs[source.id], source, random.Random(f"wiki-references:{world.seed}"))
    return WikiWorld(orgs)


def _seed(wiki: WikiOrg, org: Org, rng: random.Random, size: str) -> None:
    trees, per_tree, big = SIZES.get(size, SIZES["tiny"])
    users = sorted(org.users.values(), key=lambda user: user.uid)
    keys = sorted(org.issues)[:200] or ["TEST-1"]
    for root in ROOTS[:trees]:
        wiki.roots.append(root)
        slugs = _tree(root, per_tree, rng)
        for slug in slugs:
            when = START_MS + rng.randrange(5 * YEAR_MS)
            page = Page(
                id=wiki.new_id(),
                slug=slug,
                title=slug.rpartition("/")[2].replace("-", " ").title(),
                content="",
                author=rng.choice(users),
                created_at=when,
                modified_at=when + rng.randrange(YEAR_MS // 4),
            )
            wiki.add_page(page)
        for slug in slugs:
            page = wiki.pages[wiki.by_slug[slug]]
            _attachments(wiki, page, users, rng)
            page.content = _content(page, slugs, keys, rng)
            if rng.random() < 0.3:
                _grid(wiki, page, users, keys, rng)
            if rng.random() < 0.5:
                _comments(wiki, page, users, keys, rng)
    _big_attachments(wiki, users, rng, big)


def _seed_restricted(wiki: WikiOrg, org: Org, rng: random.Random) -> None:
    users = sorted(org.users.values(), key=lambda user: user.uid)
    keys = sorted(org.issues)[:200] or ["TEST-1"]
    for slug, owner, access_type, entries in RESTRICTED:
        author = org.find_user(owner)
        assert author is not None  # every org has the catalog's people
        when = START_MS + rng.randrange(5 * YEAR_MS)
        title = slug.rpartition("/")[2].replace("-", " ").title()
        content = (
            f"# {title}\n\nWho reads this page is set in its access.\n\n"
            "- Up: [the parent page](../).\n"
        )
        page = Page(
            wiki.new_id(), slug, title, content, author, when, when + rng.randrange(YEAR_MS)
        )
        page.access.policy = Policy(access_type)
        wiki.add_page(page)
        for kind, name, role, inheritance in entries:
            entry = Entry(wiki.new_access_id(), role, inheritance, when + 1000)
            if kind == "user":
                entry.user = org.find_user(name)
            else:
                entry.group = wiki.groups.named(name)
            page.access.entries.append(entry)
        if slug in FURNISHED:
            page.attachments.append(
                Attachment(wiki.new_id(), "notes-0.txt", rng.randbytes(2000), "text/plain", author,
                           when + 2000)
            )  # fmt: skip
            _grid(wiki, page, users, keys, rng)
            _comments(wiki, page, users, keys, rng)


def _refer(wiki: WikiOrg, org: Org, rng: random.Random) -> None:
    """Some pages and comments mention people and link to pages of their tree and to issues by
    their absolute web URLs, as people paste them (drawn last, from an RNG of its own: the
    pages, ids and bytes are those of a seed without them)."""
    web = web_urls(org.id)
    logins = sorted(user.login for user in org.users.values())
    keys = sorted(org.issues)[:200] or ["TEST-1"]
    for page in sorted(wiki.pages.values(), key=lambda page: page.id):
        root = next((r for r in wiki.roots if page.slug.startswith(r)), None)
        if root is not None and rng.random() < 0.4:
            page.content += (
                f"\nAsk @{rng.choice(logins)} first. Start from {web['wiki']}/{root}; the work is"
                f" in {web['tracker']}/{rng.choice(keys)}.\n"
            )
        for comment in page.comments:
            if rng.random() < 0.2:
                comment.body += f" cc staff:{rng.choice(logins)}"


def _tree(root: str, count: int, rng: random.Random) -> list[str]:
    """`count` slugs under `root`, up to four levels deep, parents always present."""
    slugs = [root]
    while len(slugs) < count:
        parent = rng.choice(slugs)
        if parent.count("/") - root.count("/") >= 3:
            continue
        child = f"{parent}/{rng.choice(TOPICS)}-{len(slugs)}"
        slugs.append(child)
    return slugs


def _content(page: Page, slugs: list[str], keys: list[str], rng: random.Random) -> str:
    other = rng.choice(slugs)
    lines = [
        f"# {page.title}",
        "",
        f"Owned by the team since {page.created_at // YEAR_MS + 1970}. Tracked in {rng.choice(keys)}"
        f" and {rng.choice(keys)}.",
        "",
        f"- See [{other.rpartition('/')[2]}](/{other}) for the details.",
    ]
    children = [s for s in slugs if s.rpartition("/")[0] == page.slug]
    if children:
        child = children[0].rpartition("/")[2]
        lines.append(f"- Next: [{child}](./{child}), or just [{child}]({child}).")
    if page.slug.count("/") > 1:
        lines.append("- Up: [the parent page](../).")
    parent = page.slug.rpartition("/")[0]
    siblings = [s for s in slugs if s.rpartition("/")[0] == parent and s != page.slug]
    if parent and siblings:
        sibling = siblings[0].rpartition("/")[2]
        lines.append(f"- Beside it: [{sibling}](../{sibling}).")
    for attachment in page.attachments[:2]:
        lines.append(f"- Attached: [{attachment.name}](/{page.slug}/.files/{attachment.name})")
    lines += ["", "```sh", f"make {rng.choice(('build', 'check', 'deploy'))}", "```", ""]
    return "\n".join(lines)


def _attachments(wiki: WikiOrg, page: Page, users: list[User], rng: random.Random) -> None:
    for index in range(rng.choice((0, 0, 1, 2))):
        size = rng.randrange(10, 40_000)
        page.attachments.append(
            Attachment(
                id=wiki.new_id(),
                name=f"notes-{index}.txt" if index % 2 == 0 else f"diagram-{index}.bin",
                data=rng.randbytes(size),
                mimetype="text/plain" if index % 2 == 0 else "application/octet-stream",
                author=rng.choice(users),
                created_at=page.created_at + rng.randrange(1000, 10**8),
            )
        )


def _big_attachments(wiki: WikiOrg, users: list[User], rng: random.Random, count: int) -> None:
    """Files larger than one upload part, on the first pages of the first trees."""
    roots = [wiki.page_by_slug(root) for root in wiki.roots]
    pattern = rng.randbytes(4096)
    for index in range(count):
        page = roots[index % len(roots)]
        assert page is not None
        size = PART_MIN + 1_000_000 + index * 77_777
        data = (pattern * (size // len(pattern) + 1))[:size]
        page.attachments.append(
            Attachment(wiki.new_id(), f"archive-{index}.tar", data, "application/x-tar",
                       rng.choice(users), page.created_at + 5000)
        )  # fmt: skip


def _grid(
    wiki: WikiOrg, page: Page, users: list[User], keys: list[str], rng: random.Random
) -> None:
    grid = Grid(
        id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        title=f"{page.title} register",
        page_id=page.id,
        created_at=page.created_at + 60_000,
    )
    grid.columns = [
        Column("name", "Name", "string", required=True),
        Column("amount", "Amount", "number"),
        Column("state", "State", "select", select_options=["open", "done", "dropped"]),
        Column("owner", "Owner", "staff"),
        Column("due", "Due", "date"),
        Column("checked", "Checked", "checkbox"),
        Column("issue", "Issue", "ticket"),
        Column("issue_status", "Issue status", "ticket_field", extra={"ticket_field": "status"}),
    ]
    for column in grid.columns:  # ids fixed by the seed, without drawing from `rng`
        column.id = uuid.uuid5(uuid.UUID(grid.id), column.slug).hex[:12]
    for index in range(rng.randrange(3, 21)):
        cells = {
            "name": f"item {index}",
            "amount": rng.randrange(1, 1000) if rng.random() < 0.9 else None,
            "state": rng.choice(["open", "done", "dropped"]),
            "owner": rng.choice(users).login,
            "due": f"202{rng.randrange(0, 6)}-0{rng.randrange(1, 10)}-1{rng.randrange(0, 10)}",
            "checked": rng.random() < 0.5,
            "issue": rng.choice(keys),
        }
        cells["issue_status"] = "open" if cells["state"] == "open" else "closed"
        grid.rows.append(Row(uuid.UUID(int=rng.getrandbits(128), version=4).hex, cells))
    page.grids.append(grid)
    wiki.grids[grid.id] = grid


def _comments(
    wiki: WikiOrg, page: Page, users: list[User], keys: list[str], rng: random.Random
) -> None:
    when = page.created_at
    for _ in range(rng.randrange(1, 4)):
        when += rng.randrange(60_000, 10**9)
        top = Comment(wiki.new_id(), f"Is this still right? See {rng.choice(keys)}.",
                      rng.choice(users), when)  # fmt: skip
        page.comments.append(top)
        for reply in range(rng.randrange(0, 3)):
            when += rng.randrange(60_000, 10**8)
            parent = top.id if reply == 0 else page.comments[-1].id
            page.comments.append(
                Comment(wiki.new_id(), f"Reply {reply}: yes, checked.", rng.choice(users), when,
                        parent_id=parent)
            )  # fmt: skip
