"""References in seeded tracker text, as the tracker's markup writes them.

A comment that carries files shows them: an image inline (``![shot.png](/ajax/v2/attachments/
<id>?inline=true)``), any other file as a link (``[logs.zip](/<KEY>/attachments/<id>)``, now
and then as an absolute URL on the org's tracker web host). Some comments and descriptions
mention people (``@login``, ``staff:login``) and link to other issues and to wiki pages by
their absolute web URLs; some descriptions show the issue's own files.

Drawn from RNGs of their own (per issue), after everything else, so the records, ids and bytes
of a seed are those of a seed without references: only the texts grow.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from haul.sandbox.tracker.model import Attachment, Comment, Issue, Org
from haul.sandbox.web import web_urls

DESCRIBED = 40  # the first issues whose descriptions may show their files (each generated early)
WIKI_PAGE = "team/handbook"  # the first wiki root at every size


def file_reference(org: Org, key: str, attachment: Attachment, rng: random.Random) -> str:
    """An image inline, another file as a link (relative, or on the org's web host)."""
    if attachment.mimetype.startswith("image/"):
        return f"![{attachment.name}](/ajax/v2/attachments/{attachment.id}?inline=true)"
    host = web_urls(org.id)["tracker"] if rng.random() < 0.3 else ""
    return f"[{attachment.name}]({host}/{key}/attachments/{attachment.id})"


def asides(org: Org, keys: Sequence[str], rng: random.Random) -> list[str]:
    """Now and then a mention, a link to another issue or to a wiki page, on the web hosts."""
    found = []
    logins = sorted(user.login for user in org.users.values())
    if rng.random() < 0.35:
        form = rng.choice(("@", "@", "staff:"))
        found.append(f"cc {form}{rng.choice(logins)}")
    web = web_urls(org.id)
    if keys and rng.random() < 0.2:
        found.append(f"As in {web['tracker']}/{rng.choice(keys)}")
    if rng.random() < 0.1:
        found.append(f"Notes: [the handbook]({web['wiki']}/{WIKI_PAGE})")
    return found


def refer_in_comments(
    org: Org, issue: Issue, comments: list[Comment], attachments: list[Attachment]
) -> None:
    """Each comment shows its own files; some mention people and link to the web hosts."""
    rng = random.Random(f"references:{org.seed}:{issue.key}")
    by_id = {attachment.id: attachment for attachment in attachments}
    for comment in comments:
        lines = [file_reference(org, issue.key, by_id[i], rng) for i in comment.attachment_ids]
        lines += asides(org, [issue.key.rpartition("-")[0] + "-1"], rng)
        if lines:
            comment.text = "\n\n".join([comment.text, *lines])


def refer_in_descriptions(org: Org, issues: list[Issue]) -> None:
    """The first issues' descriptions show some of their own files, mention people and link
    to the web hosts (their records are generated now, to know the files)."""
    keys = [issue.key for issue in issues]
    for issue in issues[:DESCRIBED]:
        rng = random.Random(f"described:{org.seed}:{issue.key}")
        if issue.description is None or rng.random() < 0.4:
            continue
        own = [a for a in org.records(issue).attachments if a.comment_id is None]
        lines = [file_reference(org, issue.key, a, rng) for a in own[:2]]
        lines += asides(org, keys[: issue.seq] or keys[:1], rng)
        if lines:
            org.put_issue(replace(issue, description="\n\n".join([issue.description, *lines])))
