"""A configuration haul cannot use: exit 2, and the message names the key to fix.

None of these needs a service: haul must stop before it sends anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_fixtures import SOURCE_TOKEN_ENV, TARGET_TOKEN_ENV, haul_env, run_haul, write_config

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
