"""`haul check` through the CLI: each finding with its level and fix; exit 1 on any error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.trust_fixtures import run_haul, source_queues, tokens_env, write_config


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
    from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
    from tests.helpers.cli_fixtures import SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV

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


def test_check_finds_what_the_run_would_refuse(sandbox: Any, tmp_path: Path) -> None:
    """Before any extract: a users-file row naming a login the target lacks, a source queue
    that does not exist, a survey that does not exist and a back-fill template naming a
    question its survey lacks are each an error with its key; the default user is named."""
    from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
    from tests.helpers.cli_fixtures import SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV

    info = sandbox.info
    support = info["surveys"]["source"][0]
    (tmp_path / "users.csv").write_text("source,target\nalice,ghost-login\n", encoding="utf-8")
    rule = (
        f'\n[[backfill]]\nsurvey = "{support}"\ninto = "tracker"\nqueue = "NEW"\n'
        'summary = "{no_such_question}"\n'
    )
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        target_token_env=TARGET_TOKEN_ENV,
        queues=[*source_queues(info), "NOPE"],
        services=("forms", "tracker"),
        surveys=[support, "0" * 24],
        mapping_extra={"users_file": "users.csv"},
        staging_path="staging/haul.db",
        sections=rule,
    )
    config = write_sandbox_config(tmp_path, info, options)
    env = tokens_env(info["tokens"]["admin"])

    done = run_haul("check", "--config", config, env=env)

    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("error")]
    assert any("NOPE is not a queue of the tracker source org" in line for line in errors)
    assert any("maps alice to ghost-login, and the target has no user" in line for line in errors)
    assert any(f"survey {'0' * 24} does not exist" in line for line in errors)
    assert any(
        "backfill[0].summary: {no_such_question} is not a question of survey" in line
        for line in errors
    )
    assert "ok      the default user is " in done.stdout
    assert "the target token's own user" in done.stdout
    assert f"check: {len(errors)} error(s)" in done.stdout

    (tmp_path / "queue").mkdir()
    only_queue = write_config(tmp_path / "queue", info, queues=[*source_queues(info), "NOPE"])
    extract = run_haul("extract", "--config", only_queue, env=env)
    assert extract.returncode == 2, extract.stdout + extract.stderr
    assert "scope.queues: NOPE is not a queue of the tracker source org" in extract.stderr


def test_check_and_extract_fail_within_seconds_on_a_wrong_port(
    sandbox: Any, tmp_path: Path
) -> None:
    """A service that has never answered is a wrong address, not an outage to wait out:
    check says so as an error naming the service and URL, extract exits 1, in seconds."""
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    info = sandbox.info
    wrong = f"http://127.0.0.1:{port}/v3"
    config = write_config(tmp_path, info, queues=source_queues(info), source_url=wrong)
    env = tokens_env(info["tokens"]["admin"])

    started = time.monotonic()
    check = run_haul("check", "--config", config, env=env)
    extract = run_haul("extract", "--config", config, env=env)
    took = time.monotonic() - started

    assert check.returncode == 1, check.stdout + check.stderr
    assert f"tracker at http://127.0.0.1:{port} cannot be reached" in check.stdout
    assert "tracker target org" in check.stdout  # the other side is still checked
    assert extract.returncode == 1
    last = extract.stderr.splitlines()[-1]
    assert last.startswith(f"haul: tracker at http://127.0.0.1:{port} cannot be reached")
    assert "has not answered once in this command" in last
    assert took < 40
