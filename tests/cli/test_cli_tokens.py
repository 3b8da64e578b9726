"""A token the service rejects stops the run with exit 1, naming the service and the org; the
token itself is never shown or written anywhere haul writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import (
    files_containing,
    run_haul,
    staging_db,
    tokens_env,
    write_config,
)

MADE_UP = "made-up-token-Zq8vX3kP0wL5"


def assert_nowhere(token: str, directory: Path, *outputs: str) -> None:
    """`token` is in no output and in no file under `directory` (config, db, log, blobs)."""
    for output in outputs:
        assert token not in output
    assert files_containing(directory, token) == []


@pytest.mark.parametrize("side", ["source", "target"])
def test_a_made_up_token_is_refused_before_any_work(
    sandbox: Any, tmp_path: Path, side: str
) -> None:
    """401 for a token the service does not know: exit 1, "access denied", the service and that
    side's org id; nothing is staged."""
    info = sandbox.info
    admin = info["tokens"]["admin"]
    config = write_config(tmp_path, info, queues=["DEV"])
    env = tokens_env(MADE_UP, admin) if side == "source" else tokens_env(admin, MADE_UP)

    done = run_haul("run", "--config", config, env=env)

    assert done.returncode == 1
    assert done.stderr.startswith(
        f"haul: access denied: tracker rejected the token for org {info['orgs'][side]} (401)"
    )
    assert done.stdout == ""
    assert not staging_db(tmp_path).exists()
    assert_nowhere(MADE_UP, tmp_path, done.stdout, done.stderr)


def test_a_token_without_admin_rights_stops_at_the_first_import(
    sandbox: Any, tmp_path: Path
) -> None:
    """The user token reads the source (extract works) but the target's import answers 403:
    exit 1 naming the target org; the token is in no output, log, database or blob."""
    info = sandbox.info
    user_token = info["tokens"]["user"]
    config = write_config(tmp_path, info, queues=["DEV"])

    done = run_haul("run", "--config", config, env=tokens_env(user_token))

    assert done.returncode == 1
    assert (
        f"haul: access denied: tracker rejected the token for org {info['orgs']['target']} (403)"
        in done.stderr
    )
    log = staging_db(tmp_path).with_name("haul.log")
    assert "extract_finished" in log.read_text(encoding="utf-8")  # it did work with the token
    assert staging_db(tmp_path).stat().st_size > 0
    assert_nowhere(user_token, tmp_path, done.stdout, done.stderr)
