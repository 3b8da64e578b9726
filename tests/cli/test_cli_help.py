"""`haul --help` and every command's `--help`: exit 0 and say what the command does."""

from __future__ import annotations

import pytest

from tests.helpers.cli_fixtures import run_haul

# command words -> words its help must contain (from its purpose, not its exact wording)
COMMANDS = {
    ("extract",): ("Stage the source", "--config"),
    ("load",): ("Load what is staged", "--retry-failed", "--config"),
    ("run",): ("Extract, load", "--retry-failed", "--config"),
    ("status",): ("staged, loaded, failed", "--config"),
    ("failures",): ("could not be extracted whole or loaded", "--entity", "--limit", "--config"),
    ("demo",): ("sandbox", "--size", "--seed", "--workdir"),
    ("undo",): ("Take the migration back", "deletes none", "--dry-run", "--yes", "--config"),
    ("resolve",): ("open conflicts", "--take", "--from", "--format", "--config"),
    ("config-schema",): ("JSON Schema",),
    ("init",): ("commented haul.toml", "--sandbox", "--out", "--force", "--no-input"),
    ("sandbox",): ("stand-in", "serve"),
    ("sandbox", "serve"): ("JSON line", "--size", "--seed", "--port", "--faults"),
}


def test_top_level_help_lists_every_command() -> None:
    """`haul --help` explains the tool and names each command."""
    done = run_haul("--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: haul" in done.stdout
    assert "exactly once" in " ".join(done.stdout.split())
    for status in (
        "0  done",
        "2  usage or config error",
        "3  done, but records failed",
        "4  stopped by rate limiting",
    ):
        assert status in done.stdout
    listed = done.stdout.split("Commands:", 1)[1].split()
    for (command, *_), _words in COMMANDS.items():
        assert command in listed


@pytest.mark.parametrize("command", list(COMMANDS), ids=" ".join)
def test_each_command_help_explains_it(command: tuple[str, ...]) -> None:
    """`haul COMMAND --help` (or -h) exits 0, shows its usage, what it does and its options."""
    done = run_haul(*command, "-h" if command == ("run",) else "--help")
    assert done.returncode == 0, done.stderr
    assert f"Usage: haul {' '.join(command)}" in done.stdout
    help_text = " ".join(done.stdout.split())  # undo click's line wrapping
    for words in COMMANDS[command]:
        assert words in help_text
    assert done.stderr == ""


def test_an_unknown_command_is_a_usage_error() -> None:
    """A mistyped command exits 2 and says which one."""
    done = run_haul("lod")
    assert done.returncode == 2
    assert "No such command 'lod'" in done.stderr
