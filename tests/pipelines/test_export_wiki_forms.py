"""`haul export` of the wiki's and forms' staged data: pages, attachments, comments, one table
per grid and one per survey, read back with pandas against what is staged."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from haul.pipelines.commands.run import extract
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.state.store import StagingStore
from tests.helpers.haul_fixtures import TOKEN_ENV, environ

HAUL = str(Path(sys.executable).parent / "haul")


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from haul.sandbox import server as sandbox_server

    directory = tmp_path_factory.mktemp("export-wiki-forms")
    with sandbox_server.start_sandbox(size="tiny", seed=17) as sandbox:
        info = sandbox.info
        options = SandboxConfig(
            source_token_env=TOKEN_ENV, services=("forms", "wiki"), with_target=False, queues=[],
            sections='\n[export]\nrestricted = "include"  # every staged row, to compare\n',
        )  # fmt: skip
        config = write_sandbox_config(directory, info, options)
        asyncio.run(extract(load_config(config), all_services(), environ=environ(info)))
        yield config


def test_every_wiki_and_survey_table_reads_back_with_the_staged_rows(staged: Any) -> None:
    config = staged
    out = config.parent / "exports"
    done = subprocess.run(
        [HAUL, "export", "--config", str(config), "--format", "parquet", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, TOKEN_ENV: "unused"}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    folder = out / "latest"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    files = (
        {entry["table"]: entry for entry in manifest["files"]}
        if "table" in manifest["files"][0]
        else {Path(entry["file"]).stem: entry for entry in manifest["files"]}
    )
    with StagingStore.open(config.parent / "haul.db") as store:
        counts = store.count_records()
        grids = {r.source_id: len(r.raw["rows"]) for r in store.iter_records("wiki_grid")}
        surveys = {r.source_id: r.raw for r in store.iter_records("survey")}
        answers = {s: len(list(store.iter_records("survey_answer", parent=s))) for s in surveys}

    pages = pd.read_parquet(folder / "wiki_pages.parquet")
    assert (
        len(pages) == counts["wiki_page"]
        and str(pages["created_at"].dtype) == "datetime64[us, UTC]"
    )
    assert pages["author_login"].notna().all()
    assert len(pd.read_parquet(folder / "wiki_attachments.parquet")) == counts["wiki_attachment"]
    comments = pd.read_parquet(folder / "wiki_comments.parquet")
    assert len(comments) == counts["wiki_comment"] and comments["parent_id"].notna().any()
    for grid_id, rows in grids.items():
        name = next(n for n in files if n.startswith("wiki_grid_") and n.endswith(grid_id[:8]))
        grid = pd.read_parquet(folder / f"{name}.parquet")
        assert len(grid) == rows
        assert str(grid["amount"].dtype) == "float64" and str(grid["checked"].dtype) == "bool"
    for survey_id, survey in surveys.items():
        name = next(n for n in files if n.startswith("survey_") and n.endswith(survey_id[:8]))
        table = pd.read_parquet(folder / f"{name}.parquet")
        assert len(table) == answers[survey_id]
        slugs = [q["slug"] for q in survey["questions"]]
        assert list(table.columns) == ["answer_id", "answered_at", *slugs, "staged_at"]
