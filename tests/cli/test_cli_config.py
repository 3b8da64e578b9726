"""A configuration haul cannot use: exit 2, and the message names the key to fix.

None of these needs a service: haul must stop before it sends anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_fixtures import (
    SOURCE_TOKEN_ENV,
    TARGET_TOKEN_ENV,
    haul_env,
    run_haul,
    write_config,
)

# Nothing listens here: a config error must be found before any connection is tried.
NOWHERE = {
    "tracker": "http://127.0.0.1:9/v3",
    "orgs": {"source": "1000001", "target": "1000002"},
}


def test_a_missing_config_file_exits_2_and_names_it(tmp_path: Path) -> None:
    """--config pointing at no file: exit 2, the option and the path in the message."""
    missing = tmp_path / "nowhere.toml"
    done = run_haul("run", "--config", missing)
    assert done.returncode == 2
    assert done.stderr.startswith("haul: config error: --config: cannot read")
    assert str(missing) in done.stderr
    assert done.stdout == ""


def test_failures_reports_a_missing_config_the_same_way(tmp_path: Path) -> None:
    """failures (which reads the config without opening the log) exits 2 on a missing file."""
    done = run_haul("failures", "--config", tmp_path / "nowhere.toml")
    assert done.returncode == 2
    assert "config error: --config" in done.stderr


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://127.0.0.1:9/v3", "must be an http(s) URL"),
        ("http://127.0.0.1:9/api", "must end in /v3"),
    ],
)
def test_a_bad_tracker_url_exits_2_and_names_the_key(
    tmp_path: Path, url: str, problem: str
) -> None:
    """A source URL of the wrong scheme or API version: exit 2 naming source.tracker_url."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"], source_url=url)
    done = run_haul("run", "--config", config, env=haul_env({SOURCE_TOKEN_ENV: "t"}))
    assert done.returncode == 2
    assert "config error: source.tracker_url:" in done.stderr
    assert problem in done.stderr


@pytest.mark.parametrize("missing", [SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV])
def test_a_missing_token_variable_exits_2_and_names_it(tmp_path: Path, missing: str) -> None:
    """An unset token variable: exit 2 naming the side's token_env key and the variable."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    present = {SOURCE_TOKEN_ENV: "s", TARGET_TOKEN_ENV: "t"}
    del present[missing]
    side = "source" if missing == SOURCE_TOKEN_ENV else "target"

    done = run_haul("run", "--config", config, env=haul_env(present))

    assert done.returncode == 2
    assert f"config error: {side}.token_env:" in done.stderr
    assert f"environment variable {missing} is not set" in done.stderr


def test_an_unknown_key_exits_2_and_names_it(tmp_path: Path) -> None:
    """A misspelt key is named with its section, not silently ignored."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    config.write_text(config.read_text().replace("[scope]", "[scope]\nqueus = []"))
    done = run_haul("run", "--config", config, env=haul_env({SOURCE_TOKEN_ENV: "s"}))
    assert done.returncode == 2
    assert "config error: scope.queus: unknown key" in done.stderr


def test_status_before_any_run_says_nothing_is_staged(tmp_path: Path) -> None:
    """status on a valid config with no staging database yet: exit 1, what to run first."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    done = run_haul("status", "--config", config)
    assert done.returncode == 1
    assert "nothing staged yet" in done.stderr
    assert "haul extract" in done.stderr


def test_every_config_problem_is_on_the_last_line_with_exit_2(tmp_path: Path) -> None:
    """Two mistakes in one file: exit 2 and one line that lists both by key path."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"])
    text = config.read_text(encoding="utf-8").replace(
        "[staging]", "[tuning]\nconcurency = 4\n[staging]"
    )
    config.write_text(
        text.replace(
            'token_env = "HAUL_CLI_SOURCE_TOKEN"',
            'token_env = "HAUL_CLI_SOURCE_TOKEN"\nauth_scheme = 7',
            1,
        ),
        encoding="utf-8",
    )
    done = run_haul("status", "--config", config)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("haul: config error: 2 problems: tuning.concurency: unknown key")
    assert "source.auth_scheme" in last
    assert "Traceback" not in done.stderr


def test_config_schema_prints_a_json_schema() -> None:
    """`haul config-schema` prints the schema editors read, with every section described."""
    import json

    done = run_haul("config-schema")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    assert set(schema["properties"]) >= {
        "source",
        "target",
        "scope",
        "mapping",
        "staging",
        "tuning",
    }
    assert schema["$defs"]["Endpoint"]["properties"]["tracker_url"]["description"]


def test_extract_needs_no_target(sandbox: Any, tmp_path: Path) -> None:
    """A nightly export's config has only a source: `haul extract` stages it, exit 0, and
    `haul load` says the target is missing (exit 2)."""
    from tests.helpers.cli_fixtures import tokens_env

    info = sandbox.info
    config = write_config(tmp_path, info, queues=["DEV"])
    text = config.read_text(encoding="utf-8")
    start, end = text.index("[target]"), text.index("[scope]")
    config.write_text(text[:start] + text[end:], encoding="utf-8")
    env = tokens_env(info["tokens"]["admin"])

    done = run_haul("extract", "--config", config, env=env)

    assert done.returncode == 0, done.stderr
    assert "issues staged" in done.stdout
    load = run_haul("load", "--config", config, env=env)
    assert load.returncode == 2
    assert "missing section [target]: haul load" in load.stderr


def test_a_log_file_that_cannot_be_written_says_so_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A full disk (/dev/full refuses every write): one line, not a traceback per record."""
    import structlog

    from haul.pipelines.logs import configure_logging

    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full on this machine")
    try:
        configure_logging(full)
        log = structlog.get_logger("test")
        log.warning("first")
        log.warning("second")
    finally:
        configure_logging(None)
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err
    assert err.count("the log file /dev/full cannot be written") == 1


@pytest.mark.parametrize(
    "url", ["http://ann:pa55-w0rd-Secret@127.0.0.1:9/v3", "https://pa55-w0rd-Secret@example/v3"]
)
def test_a_url_with_a_password_exits_2_and_never_shows_it(tmp_path: Path, url: str) -> None:
    """Credentials in a service URL are refused before anything runs: exit 2 naming the key,
    and the password is in no output and no file haul leaves (not an internal error)."""
    config = write_config(tmp_path, NOWHERE, queues=["TEST"], source_url=url)

    tokens = {SOURCE_TOKEN_ENV: "s", TARGET_TOKEN_ENV: "t"}
    done = run_haul("-v", "run", "--config", config, env=haul_env(tokens))

    assert done.returncode == 2, done.stderr
    assert "config error: source.tracker_url: must not hold a user name or password" in done.stderr
    for output in (done.stdout, done.stderr):
        assert "pa55-w0rd-Secret" not in output
    others = [path for path in tmp_path.rglob("*") if path.is_file() and path != config]
    assert [path for path in others if b"pa55-w0rd-Secret" in path.read_bytes()] == []
