"""Seeded texts reference files, people and the org's own web hosts, as the markup writes them."""

from __future__ import annotations

import re

from haul.sandbox.tracker.seed.generate import build_world
from haul.sandbox.web import web_urls
from haul.sandbox.wiki.seed import build_wiki

INLINE = re.compile(r"!\[[^\]]+\]\(/ajax/v2/attachments/(\w+)\?inline=true\)")
LINKED = re.compile(r"\[[^\]]+\]\((?:https://[^/]+)?/([A-Z]+-\d+)/attachments/(\w+)\)")


def test_comments_and_descriptions_show_their_own_files_and_mention_people() -> None:
    world = build_world(1, "small", admin_token="a", user_token="b")
    org = world.org_by_role("source")
    logins = {user.login for user in org.users.values()}
    inline = linked = mentions = described = 0
    for issue in org.issues.values():
        records = org.records(issue)
        files = {a.id: a for a in records.attachments}
        for comment in records.comments:
            for file_id in INLINE.findall(comment.text):
                assert files[file_id].comment_id == comment.id  # the comment's own image
                inline += 1
            for key, file_id in LINKED.findall(comment.text):
                assert key == issue.key and file_id in files
                linked += 1
            mentions += sum(m in logins for m in re.findall(r"(?:@|staff:)(\w+)", comment.text))
        described += bool(
            LINKED.search(issue.description or "") or INLINE.search(issue.description or "")
        )
    assert inline and linked and mentions and described
    assert web_urls(org.id)["tracker"] in "".join(
        c.text for i in org.issues.values() for c in org.records(i).comments
    )


def test_references_leave_the_seed_otherwise_as_it_was() -> None:
    """Same seed, same references; the records' ids are those of the generator."""
    one = build_world(3, "tiny", admin_token="a", user_token="b").org_by_role("source")
    two = build_world(3, "tiny", admin_token="a", user_token="b").org_by_role("source")
    assert [i.description for i in one.issues.values()] == [
        i.description for i in two.issues.values()
    ]


def test_wiki_pages_link_to_the_orgs_web_hosts_and_mention_people() -> None:
    world = build_world(1, "tiny", admin_token="a", user_token="b")
    source = world.org_by_role("source")
    wiki = build_wiki(world).orgs[source.id]
    contents = "".join(page.content for page in wiki.pages.values())
    assert web_urls(source.id)["wiki"] + "/team/" in contents
    assert re.search(r"Ask @\w+", contents)
