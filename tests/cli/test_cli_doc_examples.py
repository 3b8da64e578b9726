"""The docs' command examples run as written: each `.venv/bin/haul ...` line of the shell
blocks of the command reference (docs/reference/commands.md) and of the exports page
(docs/how-to/exports.md), in that order, by /bin/sh in a folder laid out as they say (.venv,
haul.toml), against a sandbox, exits 0.

Only what cannot run here is left out, each for its reason (`NOT_HERE`). The crontab line and
the back-fill rules have tests of their own (tests/export/test_export_docs.py,
test_cli_backfill_example.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_fixtures import source_queues, tokens_env, write_config
from tests.helpers.docs_pages import blocks, doc

PAGES = (doc("reference/commands.md"), doc("how-to/exports.md"))

NOT_HERE = {
    "sandbox serve": "serves until stopped (tests/cli/test_cli_sandbox_serve.py starts it)",
    "init --sandbox": "names the sandbox's port, writes haul.toml (tests/cli/test_cli_init.py)",
}


def doc_commands() -> list[str]:
    """Every `.venv/bin/haul` line of the pages' sh blocks, in order (comments kept: sh
    drops them), less those `NOT_HERE` names."""
    lines = [
        line for page in PAGES for block in blocks(page, "sh") for line in block.body.splitlines()
    ]
    return [
        line
        for line in lines
        if line.startswith(".venv/bin/haul ") and not any(skip in line for skip in NOT_HERE)
    ]


def test_the_docs_list_the_commands_this_test_runs() -> None:
    """The command reference and the nightly block are found, one command of each kind."""
    commands = doc_commands()
    verbs = {line.split()[1] for line in commands}
    assert verbs >= {"check", "extract", "plan", "load", "run", "status", "verify", "export"}
    assert {"failures", "map", "undo", "config-schema", "--help"} <= verbs


@pytest.mark.slow  # a haul process per example, about forty seconds; none is skipped
def test_every_doc_example_runs_as_written(tmp_path: Path) -> None:
    """Each example, run by /bin/sh in the docs' layout against a tiny sandbox (a
    migration's config: a [target], no [export]), exits 0, and `haul map > keys.csv` writes
    the key map."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as sandbox:
        info = sandbox.info
        write_config(tmp_path, info, queues=source_queues(info))
        (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
        env = tokens_env(info["tokens"]["admin"])
        for command in doc_commands():
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert (tmp_path / "keys.csv").read_text(encoding="utf-8").startswith("entity,source_id,")
