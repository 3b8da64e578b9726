"""The exports page of the docs stays true (docs/how-to/exports.md): its cron line, run as
written against a sandbox, extracts then exports, and its other recipes run the same commands.
(Its table reference is generated: tests/docs/test_docs_site.py.)"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.docs_pages import blocks, doc
from tests.helpers.export_fixtures import haul_env, only_folder

EXPORTS = doc("how-to/exports.md")
CRON_HOME = "/srv/haul"


def fenced(language: str) -> list[str]:
    """The bodies of the exports page's code blocks in `language`."""
    return [block.body for block in blocks(EXPORTS, language)]


def cron_command() -> str:
    """The command of the page's crontab line (its five schedule fields dropped)."""
    (block,) = fenced("crontab")
    (line,) = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    return line.split(None, 5)[5]


def test_every_recipe_runs_the_cron_lines_commands() -> None:
    """systemd and Airflow run the same haul commands, with the same options, as cron."""
    commands = [
        part.split("haul ", 1)[1] for part in cron_command().split(" && ") if "bin/haul" in part
    ]
    (service, _timer) = fenced("ini")
    assert [
        line.split("bin/haul ", 1)[1]
        for line in service.splitlines()
        if line.startswith("ExecStart=")
    ] == commands
    (dag,) = [block for block in fenced("python") if "bash_command=(" in block]  # the nightly's
    bash = "".join(re.findall(r'"([^"]*)"', dag.split("bash_command=(", 1)[1].split(")", 1)[0]))
    assert [
        part.split("haul ", 1)[1] for part in bash.split(" && ") if "bin/haul" in part
    ] == commands


def test_the_cron_line_extracts_then_exports(tmp_path: Path) -> None:
    """The crontab line, in a folder laid out as the page says (.venv, haul.toml, haul.env),
    run by /bin/sh: exit 0, and a dated folder of Parquet files with its manifest."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=7) as sandbox:
        info = sandbox.info
        options = SandboxConfig(source_token_env="HAUL_SOURCE_TOKEN", with_target=False)
        write_sandbox_config(tmp_path, info, options)
        (tmp_path / "haul.env").write_text(f"HAUL_SOURCE_TOKEN={info['tokens']['admin']}\n")
        (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
        command = cron_command().replace(CRON_HOME, shlex.quote(str(tmp_path)))
        env = {
            "PATH": os.defpath,
            "HOME": str(tmp_path),
            **{k: v for k, v in haul_env().items() if k in ("COLUMNS", "TERM")},
        }
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    folder = only_folder(tmp_path / "exports")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "parquet" and manifest["run"]["command"] == "extract"
    assert {entry["table"] for entry in manifest["files"]} >= {"issues", "comments", "worklogs"}
    assert "--since last: no earlier export" in done.stderr  # the first night exports everything
