"""`haul check` names, before the load, each staged text that shows files the migration does not
carry, and the texts whose links to the source's web hosts stay there for want of a web
address in the config: their references would keep pointing at the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from haul.pipelines.config import load_config
from haul.pipelines.tracker.checks.check import web_host_findings as tracker_web_hosts
from haul.pipelines.tracker.children.layer import reference_findings
from haul.pipelines.wiki.service import web_host_findings as wiki_web_hosts
from haul.state.store import StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


def test_a_text_showing_a_file_no_staged_record_holds_is_named(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "haul.db") as store:
        description = "![a](/ajax/v2/attachments/11?inline=true) [b](/OPS-9/attachments/99)"
        store.upsert_records(
            "issue",
            [{"source_id": "TEST-1", "raw": {"description": description}, "updated_at": "t1"}],
        )
        store.replace_children("TEST-1", "attachment", [{"source_id": "TEST-1/11", "raw": {}}])
        store.replace_children("TEST-1", "comment", [{"source_id": "7", "raw": {"text": "ok"}}])

        (finding,) = reference_findings(store)

    assert finding.level == "warning"
    assert "issue TEST-1 shows files that are not migrated (99)" in finding.what


def test_every_file_shown_migrated_is_one_ok(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "haul.db") as store:
        raw = {"description": "[b](/TEST-1/attachments/11)"}
        store.upsert_records("issue", [{"source_id": "TEST-1", "raw": raw, "updated_at": "t1"}])
        store.replace_children("TEST-1", "attachment", [{"source_id": "TEST-1/11", "raw": {}}])
        assert [f.level for f in reference_findings(store)] == ["ok"]


CONFIG = """
[source]
tracker_url = "http://127.0.0.1:8700/v3"
wiki_url = "http://127.0.0.1:8701/v1"
org_id = "1"
token_env = "SRC_TOKEN"
{source_web}
[target]
tracker_url = "http://127.0.0.1:8700/v3"
wiki_url = "http://127.0.0.1:8701/v1"
org_id = "2"
token_env = "DST_TOKEN"
{target_web}
[scope]
queues = ["TEST"]
wiki_roots = ["team"]
[staging]
path = "haul.db"
"""
WEB = 'tracker_web_url = "https://{0}.tracker.test"\nwiki_web_url = "https://{0}.wiki.test"\n'


def staged_texts(store: StagingStore) -> None:
    """Two issue texts and a page that link to the source's web hosts, one that links
    elsewhere (another queue's issue, a page outside the roots)."""
    issues = {
        "TEST-1": "see https://old.tracker.test/TEST-2",
        "TEST-2": "[f](https://old.tracker.test/TEST-2/attachments/11), https://old.wiki.test/team/a",
        "TEST-3": "https://x.test/OPS-1 https://old.wiki.test/hr",
    }
    rows = [{"source_id": key, "raw": {"description": text}, "updated_at": "t1"}
            for key, text in issues.items()]  # fmt: skip
    store.upsert_records("issue", rows)
    store.replace_children("TEST-2", "attachment", [{"source_id": "TEST-2/11", "raw": {}}])
    page = {"content": "the work: https://old.tracker.test/TEST-1?focus=1, the notes: /team/b"}
    store.upsert_records("wiki_page", [{"source_id": "team", "raw": page, "updated_at": "t1"}])


def test_links_to_the_source_host_without_its_web_url_are_a_warning_naming_the_setting(
    tmp_path: Path,
) -> None:
    """No tracker_web_url nor wiki_web_url: check counts the staged texts whose absolute
    links point at the source (a migrated queue's issue, a staged file, a page under a
    migrated root) per service, and names the setting to add and the host it saw."""
    config = load_config(write(tmp_path, CONFIG.format(source_web="", target_web="")))
    with StagingStore.open(tmp_path / "haul.db") as store:
        staged_texts(store)
        tracker = tracker_web_hosts(config, store)
        wiki = wiki_web_hosts(config, store)
    assert [f.level for f in tracker + wiki] == ["warning"] * 3
    issues, pages, in_wiki = tracker[0].what, tracker[1].what, wiki[0].what
    assert issues.startswith("2 staged tracker text(s) link to the source's issues and files on"
                             " https://old.tracker.test")  # fmt: skip
    assert "tracker_web_url is not set" in issues and "[source] tracker_web_url" in tracker[0].fix
    assert pages.startswith("1 staged tracker text(s) link to pages of the migrated wiki roots on"
                            " https://old.wiki.test")  # fmt: skip
    assert "[target] wiki_web_url" in tracker[1].fix
    assert in_wiki.startswith("1 staged wiki text(s) link to the source's issues")


def test_links_to_the_source_host_with_both_web_urls_set_say_nothing(tmp_path: Path) -> None:
    text = CONFIG.format(source_web=WEB.format("old"), target_web=WEB.format("new"))
    config = load_config(write(tmp_path, text))
    with StagingStore.open(tmp_path / "haul.db") as store:
        staged_texts(store)
        assert tracker_web_hosts(config, store) == wiki_web_hosts(config, store) == []


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "haul.toml"
    path.write_text(text, encoding="utf-8")
    return path
