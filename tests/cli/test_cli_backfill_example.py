"""The docs' back-fill example stays true (docs/how-to/backfill.md): its `[[backfill]]` rules, added to a config for the
sandbox as they are written (only the survey's placeholder id replaced by the sandbox's support
survey), pass `haul check` and `haul plan` without a conflict."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.cli_fixtures import SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV, run_haul, tokens_env
from tests.helpers.docs_pages import blocks, doc

PLACEHOLDER = "0123456789abcdef01234567"  # the survey id the docs' examples show


def backfill_example() -> str:
    """The back-fill page's example: the TOML block with one rule of each kind."""
    (example,) = [
        block.body
        for block in blocks(doc("how-to/backfill.md"), "toml")
        if 'into = "wiki_grid"' in block.body and "[source]" not in block.body
    ]
    return example


def plan_rows(output: str) -> dict[str, list[int]]:
    """`haul plan`'s table as entity -> [create, skip, conflict, blocked]."""
    rows = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if len(cells) == 5 and all(cell.isdigit() for cell in cells[1:]):
            rows[cells[0]] = [int(cell) for cell in cells[1:]]
    return rows


def test_the_docs_backfill_example_passes_check_and_plan(sandbox: Any, tmp_path: Path) -> None:
    """On the sandbox, with the support survey in scope: check finds no error, the extract
    stages the answers, and the plan creates one issue per answer and the grid, with no
    conflict and nothing blocked."""
    info = sandbox.info
    support = info["surveys"]["source"][0]
    rules = backfill_example().replace(PLACEHOLDER, support)
    assert PLACEHOLDER not in rules and rules.count(support) == 2
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        services=("forms", "tracker", "wiki"),
        surveys=[support],
        sections="\n" + rules,
    )
    config = write_sandbox_config(tmp_path, info, options)
    env = tokens_env(info["tokens"]["admin"])

    extract = run_haul("extract", "--config", config, env=env)
    check = run_haul("check", "--config", config, env=env)
    plan = run_haul("plan", "--config", config, env=env)

    assert extract.returncode == 0, extract.stderr
    assert check.returncode == 0, check.stdout + check.stderr
    assert "check: 0 error(s)" in check.stdout
    assert plan.returncode == 0, plan.stdout + plan.stderr
    rows = plan_rows(plan.stdout)
    answers = rows["backfill_issue"][0]
    assert answers > 0 and rows["backfill_grid"] == [1, 0, 0, 0]
    assert rows["backfill_grid_rows"] == [1, 0, 0, 0]
    assert all(conflict == blocked == 0 for _, _, conflict, blocked in rows.values()), rows


def test_a_grid_page_the_target_lacks_is_a_conflict_in_the_plan(
    sandbox: Any, tmp_path: Path
) -> None:
    """The example with its grid on a page neither in the target nor migrated: the plan names
    the page and what to do as a conflict of the grid (and blocks its rows) instead of ending
    in an internal error."""
    info = sandbox.info
    support = info["surveys"]["source"][0]
    rules = re.sub(r'page = "[^"]*"', 'page = "team/handbook/requests"', backfill_example())
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        services=("forms", "tracker", "wiki"),
        surveys=[support],
        sections="\n" + rules.replace(PLACEHOLDER, support),
    )
    config = write_sandbox_config(tmp_path, info, options)
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0

    plan = run_haul("plan", "--config", config, env=env)

    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "internal error" not in plan.stderr
    rows = plan_rows(plan.stdout)
    assert rows["backfill_grid"][2] == 1 and rows["backfill_grid_rows"][3] == 1
    assert "wiki page team/handbook/requests does not exist in the target: create it first" in (
        plan.stdout
    )
