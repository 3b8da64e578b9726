"""`haul init --sandbox`: a commented config for a running sandbox, used as written.

The sandbox is told by its tracker URL (asked over HTTP), by a file holding its JSON line, or
by that line on stdin; the file written moves every queue, wiki tree and survey of the source
org into the target org, names the token's variable, never the token, and needs no edit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import files_containing, haul_env, invoke_haul, run_haul

TOKEN_ENV = "HAUL_SANDBOX_TOKEN"


def exported(stdout: str) -> dict[str, str]:
    """The variables the `export NAME=VALUE` lines of `stdout` set."""
    lines = [line.removeprefix("export ") for line in stdout.splitlines()]
    return dict(line.split("=", 1) for line in lines if not line.startswith("#") and "=" in line)


def test_init_then_check_run_verify_with_no_edit(sandbox: Any, tmp_path: Path) -> None:
    """From the tracker URL alone: init writes a config naming every org, web host, queue,
    wiki root and survey; haul check, run and verify on it exit 0; no file haul leaves holds
    the token."""
    config = tmp_path / "haul.toml"
    info = sandbox.info

    init = run_haul("init", "--sandbox", info["tracker"], "--out", config)

    assert init.returncode == 0, init.stderr
    tokens = exported(init.stdout)
    assert tokens == {TOKEN_ENV: info["tokens"]["admin"]}
    assert "throwaway" in init.stdout
    text = config.read_text(encoding="utf-8")
    for value in (
        *(info[service] for service in ("tracker", "wiki", "forms")),
        *info["orgs"].values(),
        *(host for role in info["web"].values() for host in role.values()),
        *info["queues"]["source"],
        *info["wiki_roots"]["source"],
        *info["surveys"]["source"],
    ):
        assert value in text
    for command in ("check", "run", "verify"):
        done = run_haul(command, "--config", config, env=haul_env(tokens))
        assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    assert files_containing(tmp_path, info["tokens"]["admin"]) == []


def test_the_json_line_from_a_file_or_stdin_writes_the_same_file(
    sandbox: Any, tmp_path: Path
) -> None:
    """The JSON line `haul sandbox serve` prints, in a file or on stdin, says what the
    sandbox's URL does: the three files are the same."""
    line = tmp_path / "sandbox.json"
    line.write_text("starting\n" + json.dumps(sandbox.info) + "\n", encoding="utf-8")

    by_url = invoke_haul("init", "--sandbox", sandbox.info["tracker"], "--out", tmp_path / "a.toml")
    by_file = invoke_haul("init", "--sandbox", line, "--out", tmp_path / "b.toml")
    by_stdin = invoke_haul(
        "init", "--sandbox", "-", "--out", tmp_path / "c.toml", input=line.read_text()
    )

    for done in (by_url, by_file, by_stdin):
        assert done.exit_code == 0, done.stderr
        assert exported(done.stdout) == {TOKEN_ENV: sandbox.info["tokens"]["admin"]}
    written = {(tmp_path / name).read_text() for name in ("a.toml", "b.toml", "c.toml")}
    assert len(written) == 1


def test_init_never_writes_a_token(sandbox: Any, tmp_path: Path) -> None:
    """Of the token, the file and stderr say nothing; stdout only the export lines; variables
    of the caller's own choosing are named instead of the default."""
    config = tmp_path / "haul.toml"
    token = sandbox.info["tokens"]["admin"]

    done = invoke_haul(
        "init", "--sandbox", sandbox.info["tracker"], "--out", config,
        "--source-token-env", "SRC", "--target-token-env", "DST",
    )  # fmt: skip

    assert done.exit_code == 0, done.stderr
    assert token not in done.stderr
    assert [line for line in done.stdout.splitlines() if token in line] == [
        f"export SRC={token}",
        f"export DST={token}",
    ]
    assert 'token_env = "SRC"' in config.read_text()
    assert 'token_env = "DST"' in config.read_text()
    assert files_containing(tmp_path, token) == []


def test_an_existing_file_is_kept_without_force(sandbox: Any, tmp_path: Path) -> None:
    """A file at --out is not replaced (exit 2, saying how); with --force it is."""
    config = tmp_path / "haul.toml"
    config.write_text("# mine\n")

    kept = invoke_haul("init", "--sandbox", sandbox.info["tracker"], "--out", config)
    assert kept.exit_code == 2
    assert "exists: pass --force" in kept.stderr
    assert kept.stdout == ""
    assert config.read_text() == "# mine\n"

    replaced = invoke_haul("init", "--sandbox", sandbox.info["tracker"], "--out", config, "--force")
    assert replaced.exit_code == 0, replaced.stderr
    assert sandbox.info["orgs"]["source"] in config.read_text()


@pytest.mark.fast
def test_what_is_no_sandbox_is_said(tmp_path: Path) -> None:
    """A URL where nothing answers, a missing file, a file without the JSON line: exit 2,
    each said, nothing written."""
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    for where, said in (
        ("http://127.0.0.1:9/v3", "no sandbox answers at"),
        (tmp_path / "missing.json", "cannot read"),
        (junk, "holds no JSON line"),
    ):
        done = invoke_haul("init", "--sandbox", where, "--out", tmp_path / "haul.toml")
        assert done.exit_code == 2, (where, done.stderr)
        assert said in done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "haul.toml").exists()
