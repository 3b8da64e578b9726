"""The key map of wiki pages: a page's target slug follows `[mapping] wiki_roots` (and `moved`
says it changed), and a restricted page's row, slug and all, is left out of `haul map` and of
the export's `id_map` unless `[export] restricted = "include"`. A real store in a temp folder,
its ledger moved as a load moves it; `haul` run as a subprocess."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from haul.state.store import StagingStore
from tests.helpers.export_fixtures import only_folder, run_haul

OPEN = {"access_type": "all_staff", "all_staff_role": "reader"}
CUSTOM = {"access_type": "custom"}
HR = {"direct": [{"type": "group", "id": 5, "name": "hr"}], "inherited": []}
NOBODY = {"direct": [], "inherited": []}


def page(slug: str, page_id: int, policy: dict, lists: dict) -> dict:
    return {"slug": slug, "id": page_id, "title": slug, "access_policy": policy,
            "access_lists": lists}  # fmt: skip


def stage(path: Path) -> None:
    """Two loaded pages under `team` (one open, one only HR reads) and one still pending."""
    pages = {
        "team/handbook": page("team/handbook", 7, OPEN, NOBODY),
        "team/salaries": page("team/salaries", 8, CUSTOM, HR),
        "team/drafts": page("team/drafts", 9, OPEN, NOBODY),
    }
    with StagingStore.open(path) as store:
        store.upsert_records(
            "wiki_page", [{"source_id": slug, "raw": raw} for slug, raw in pages.items()]
        )
        store.ledger.plan(
            {"entity": "wiki_page", "source_id": slug, "payload_hash": slug} for slug in pages
        )
        store.ledger.done("wiki_page", "team/handbook", "107")
        store.ledger.done("wiki_page", "team/salaries", "108")


def write_config(directory: Path, restricted: str) -> Path:
    stage(directory / "haul.db")
    path = directory / "haul.toml"
    wiki = 'wiki_url = "https://wiki.example/v1"\norg_id = "1"\ntoken_env = "T"\n'
    path.write_text(
        f'[source]\n{wiki}\n[target]\n{wiki}\n[scope]\nwiki_roots = ["team"]\n\n'
        '[mapping]\nwiki_roots = { team = "crew" }\n\n[staging]\npath = "haul.db"\n\n'
        f'[export]\nrestricted = "{restricted}"\n',
        encoding="utf-8",
    )
    return path


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


HANDBOOK = {"entity": "wiki_page", "source_id": "team/handbook", "source_key": "team/handbook",
            "target_id": "107", "target_key": "crew/handbook", "moved": "true"}  # fmt: skip
SALARIES = {**HANDBOOK, "source_id": "team/salaries", "source_key": "team/salaries",
            "target_id": "108", "target_key": "crew/salaries"}  # fmt: skip


@pytest.mark.parametrize(("restricted", "expected"), [
    ("exclude", [HANDBOOK]),
    ("include", [HANDBOOK, SALARIES]),
])  # fmt: skip
def test_pages_map_to_their_target_slug_and_restricted_ones_follow_the_setting(
    tmp_path: Path, restricted: str, expected: list[dict[str, str]]
) -> None:
    """`haul map` and the export's id_map.csv hold the loaded pages only, each under the root
    it was mapped to; the HR page only when the config includes restricted content."""
    config = write_config(tmp_path, restricted)
    printed = run_haul("map", "--config", str(config))
    assert printed.returncode == 0, printed.stderr
    assert rows(printed.stdout) == expected
    assert ("1 restricted records left out" in printed.stderr) == (restricted == "exclude")
    out = tmp_path / "exports"
    exported = run_haul("export", "--config", str(config), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    in_export = rows((only_folder(out) / "id_map.csv").read_text(encoding="utf-8"))
    keys = list(expected[0])
    assert [{key: row[key] for key in keys} for row in in_export] == expected
    assert {row["restricted"] for row in in_export} == (
        {"false"} if restricted == "exclude" else {"false", "true"}
    )
