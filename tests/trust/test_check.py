"""`haul check` through the CLI: each finding with its level and fix; exit 1 on any error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trust_fixtures import run_haul, source_queues, tokens_env, write_config


def test_check_passes_before_and_after_extract(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    env = tokens_env(info["tokens"]["admin"])

    before = run_haul("check", "--config", config, env=env)
    assert run_haul("extract", "--config", config, env=env).returncode == 0
    after = run_haul("check", "--config", config, env=env)

    assert before.returncode == 0, before.stdout + before.stderr
    assert "warning nothing is staged" in before.stdout
    assert after.returncode == 0, after.stdout + after.stderr
    assert "ok      the target has every queue and dictionary key" in after.stdout
    assert "ok      every staged user maps to a target user" in after.stdout
    assert "may use the admin endpoints" in after.stdout
    assert "check: 0 error(s)" in after.stdout


def test_check_names_a_rejected_token_and_a_non_admin_one(sandbox: Any, tmp_path: Path) -> None:
    info = sandbox.info
    config = write_config(tmp_path, info, queues=source_queues(info))
    org = info["orgs"]["source"]

    rejected = run_haul(
        "check", "--config", config, env=tokens_env("not-a-token", info["tokens"]["admin"])
    )
    user = run_haul(
        "check", "--config", config, env=tokens_env(info["tokens"]["admin"], info["tokens"]["user"])
    )

    assert rejected.returncode == 1
    assert f"error   tracker source org {org}: the token is rejected" in rejected.stdout
    assert "fix: put a valid token for this org in HAUL_CLI_SOURCE_TOKEN" in rejected.stdout
    assert "not-a-token" not in rejected.stdout + rejected.stderr
    assert user.returncode == 1
    assert "the token may not use the admin import endpoints" in user.stdout


def test_check_says_the_load_creates_a_queue_the_target_lacks(sandbox: Any, tmp_path: Path) -> None:
    """By default (`create_missing`) a queue the target lacks is made first: check says so
    and passes; with `create_missing = false` it is an error naming the setting."""
    info = sandbox.info
    env = tokens_env(info["tokens"]["admin"])
    for allowed, folder in ((True, tmp_path / "creates"), (False, tmp_path / "refuses")):
        folder.mkdir()
        config = write_config(
            folder,
            info,
            queues=source_queues(info),
            queue_mapping={"TEST": "NOPE"},
            create_missing=None if allowed else False,
        )
        assert run_haul("extract", "--config", config, env=env).returncode == 0
        done = run_haul("check", "--config", config, env=env)
        if allowed:
            assert done.returncode == 0, done.stdout
            assert "ok      the target lacks queue NOPE: the load creates it first" in done.stdout
        else:
            assert done.returncode == 1
            assert (
                "error   the target lacks queue NOPE and [mapping] create_missing is false (fix: "
                "create it in the target, map it elsewhere, or set create_missing = true)"
            ) in done.stdout


def test_check_probes_the_wiki_and_forms_too(sandbox: Any, tmp_path: Path) -> None:
    """All three services configured: each org's token is probed on each service."""
    from cli_fixtures import SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV

    from haul.pipelines.sandbox_config import SandboxConfig, write_sandbox_config

    info = sandbox.info
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        services=("forms", "tracker", "wiki"),
        staging_path="staging/haul.db",
    )
    config = write_sandbox_config(tmp_path, info, options)
    done = run_haul("check", "--config", config, env=tokens_env(info["tokens"]["admin"]))
    assert done.returncode == 0, done.stdout + done.stderr
    for service in ("tracker", "wiki", "forms"):
        assert f"{service} source org {info['orgs']['source']}" in done.stdout, service
    assert f"wiki target org {info['orgs']['target']}" in done.stdout
