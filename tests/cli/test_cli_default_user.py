"""The default creator: with no `mapping.default_user`, a record whose user has no target
user is loaded as the target token's own user, and `haul check` says so beforehand."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.cli_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    run_haul,
    staging_db,
    tokens_env,
)


def test_a_backfill_whose_author_has_no_target_user_loads_as_the_tokens_user(
    sandbox: Any, tmp_path: Path
) -> None:
    """A survey whose author left (no target user) and no default_user: check warns, naming
    the default user; every answer still loads (exit 0), none fails for want of a user."""
    info = sandbox.info
    support = info["surveys"]["source"][0]
    rule = (
        f'\n[[backfill]]\nsurvey = "{support}"\ninto = "tracker"\nqueue = "NEW"\n'
        'summary = "Answer"\n'
    )
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        queues=[],
        services=("forms", "tracker"),
        surveys=[support],
        mapping_extra={},
        staging_path="staging/haul.db",
        sections=rule,
    )
    config = write_sandbox_config(tmp_path, info, options)
    env = tokens_env(info["tokens"]["admin"])
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    with sqlite3.connect(staging_db(tmp_path)) as db:
        raw = json.loads(
            db.execute(
                "SELECT raw FROM records WHERE entity = 'survey' AND source_id = ?", [support]
            ).fetchone()[0]
        )
        raw["author"]["username"] = "departed"
        db.execute(
            "UPDATE records SET raw = ? WHERE entity = 'survey' AND source_id = ?",
            [json.dumps(raw), support],
        )
        answers = db.execute(
            "SELECT count(*) FROM records WHERE entity = 'survey_answer' AND parent = ?",
            [support],
        ).fetchone()[0]

    check = run_haul("check", "--config", config, env=env)
    load = run_haul("load", "--config", config, env=env)

    assert check.returncode == 0, check.stdout + check.stderr
    assert "the default user is " in check.stdout
    me = check.stdout.split("the default user is ", 1)[1].split(",", 1)[0]
    assert (
        f"backfill[0]: the author of survey {support} (departed) has no target user: its "
        f"answers are loaded as the default user {me}"
    ) in check.stdout
    assert load.returncode == 0, load.stdout + load.stderr
    assert "users loaded as the default user: departed (back-fill)" in load.stdout
    report = json.loads((tmp_path / "staging" / "report.json").read_text(encoding="utf-8"))
    assert "departed (back-fill)" in report["unmapped_users"]
    with sqlite3.connect(staging_db(tmp_path)) as db:
        done = db.execute(
            "SELECT count(*) FROM ledger WHERE entity = 'backfill_issue' AND status = 'done'"
        ).fetchone()[0]
    assert done == answers > 0
