"""References in text: files, users and web hosts of the source rewritten to the target's."""

from __future__ import annotations

import pytest

from haul.pipelines.sync.references import (
    References,
    SourceScan,
    WebHosts,
    file_references,
    moved_slug,
)
from haul.pipelines.sync.three_way import diff_fields

pytestmark = pytest.mark.fast

TRACKER = WebHosts("https://tracker.src.test", "https://tracker.dst.test")
WIKI = WebHosts("https://wiki.src.test", "https://wiki.dst.test")
CARRIED = {"101": ("NEW-3", "9001"), "102": ("NEW-3", "9002")}
USERS = {"alice": "alice.new", "bob": "bob", "carol": None}


def refs() -> References:
    return References(
        logins=set(USERS),
        attachment=CARRIED.get,
        login=USERS.__getitem__,
        page=moved_slug(("team",), {"team": "crew"}),
        tracker=TRACKER,
        wiki=WIKI,
    )


def test_an_inline_image_and_a_file_link_become_the_targets_files() -> None:
    """Both markup forms, relative and absolute on the source's web host."""
    text = (
        "![shot.png](/ajax/v2/attachments/101?inline=true) and [logs.zip](/TEST-3/attachments/102)"
        " and https://tracker.src.test/TEST-3/attachments/101"
    )
    assert refs().rewrite(text) == (
        "![shot.png](/ajax/v2/attachments/9001?inline=true) and [logs.zip](/NEW-3/attachments/9002)"
        " and https://tracker.dst.test/NEW-3/attachments/9001"
    )


def test_a_file_not_in_the_target_yet_is_left_as_written_and_named_as_waiting() -> None:
    text = "![a](/ajax/v2/attachments/555?inline=true) ![b](/ajax/v2/attachments/101)"
    references = refs()
    assert references.rewrite(text).startswith("![a](/ajax/v2/attachments/555?inline=true)")
    assert references.waiting(text) == ["555"]
    assert file_references(text) == ["555", "101"]


def test_mentions_follow_the_users_mapping_and_an_unmapped_one_pings_no_one() -> None:
    references = refs()
    text = "@alice, staff:bob and @carol; @stranger and mail@alice.org stay"
    assert references.rewrite(text) == (
        "@alice.new, staff:bob and carol; @stranger and mail@alice.org stay"
    )
    assert references.left == {"mention of carol: no target user, written as plain text": 1}


def test_urls_on_the_source_hosts_move_to_the_targets_pages_their_slugs_moved() -> None:
    references = refs()
    text = (
        "see https://wiki.src.test/team/handbook#top, https://tracker.src.test/TEST-12 and"
        " https://wiki.src.test/other/page; https://wiki.src.test.evil/x stays"
    )
    assert references.rewrite(text) == (
        "see https://wiki.dst.test/crew/handbook#top, https://tracker.dst.test/TEST-12 and"
        " https://wiki.src.test/other/page; https://wiki.src.test.evil/x stays"
    )
    assert references.left == {
        "https://wiki.src.test/other/page: not migrated, left pointing at the source": 1
    }


def test_scan_finds_each_reference_to_the_source() -> None:
    scan = SourceScan(files={"101"}, hosts=(TRACKER, WIKI), mapped_away={"alice"})
    text = "![x](/ajax/v2/attachments/101) https://wiki.src.test/a @alice @bob /NEW-1/attachments/9"
    assert scan.scan(text) == ["/ajax/v2/attachments/101", "https://wiki.src.test/a", "@alice"]
    assert list(scan.scan_fields({"text": "ok", "rows": [["@alice"]]})) == [("rows", "@alice")]


def test_one_host_for_both_orgs_is_no_source_reference() -> None:
    same = WebHosts("https://tracker.test", "https://tracker.test")
    assert SourceScan(hosts=(same,)).scan("https://tracker.test/TEST-1") == []


def test_what_is_left_is_counted_once_per_text_however_often_it_is_rewritten() -> None:
    """A text is rewritten for its send, its find and verify: each left reference counts once."""
    references = refs()
    for _ in range(3):
        references.rewrite("@carol, see https://wiki.src.test/other/page")
    references.rewrite("@carol again")
    assert references.left == {
        "mention of carol: no target user, written as plain text": 2,
        "https://wiki.src.test/other/page: not migrated, left pointing at the source": 1,
    }


def test_a_text_nothing_writes_again_counts_the_files_not_in_the_target() -> None:
    references = refs()
    text = references.settled(
        "![a](/ajax/v2/attachments/555) ![b](/ajax/v2/attachments/101)", "goal 7"
    )
    assert text == "![a](/ajax/v2/attachments/555) ![b](/ajax/v2/attachments/9001)"
    assert references.left == {"file 555 shown in goal 7: not in the target": 1}


def test_a_text_haul_patched_with_its_files_target_ids_is_the_text_it_wrote() -> None:
    """The base of a text written before its files were in the target holds the source's file
    ids; haul's patch writes the target's: the same text. Another file id, or another word,
    is a change."""
    written = "See ![shot.png](/ajax/v2/attachments/101?inline=true) and [x](/NEW-3/attachments/7)"
    patched = "See ![shot.png](/ajax/v2/attachments/9001?inline=true) and [x](/NEW-3/attachments/7)"
    references = refs()
    assert references.written_as(written, patched)
    assert not references.written_as(written, patched.replace("9001", "9002"))
    assert not references.written_as(written, patched.replace("See", "Look at"))
    assert not references.written_as(written, None)


def test_the_base_as_patched_decides_a_three_way_comparison() -> None:
    """A description edited only in the target, its base written before its files were in:
    kept (no conflict); the source's own edit of the text is still a conflict."""
    written = {"description": "![a](/ajax/v2/attachments/101)", "tags": ["old"]}
    ours = {"description": "![a](/ajax/v2/attachments/9001)", "tags": ["new"]}
    theirs = {"description": "A person's words ![a](/ajax/v2/attachments/9001)", "tags": ["old"]}
    changes = diff_fields(ours, written, theirs, refs().written_as)
    assert changes.carried == {"tags": ["new"]} and not changes.conflicts
    assert changes.kept == {"description": theirs["description"]}
    edited = {"description": "Edited at the source ![a](/ajax/v2/attachments/9001)"}
    assert diff_fields(edited, written, theirs, refs().written_as).conflicts
