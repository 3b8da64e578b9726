"""The config file: what a valid one gives, and that every mistake names its key."""

from pathlib import Path

import pytest

from haul.pipelines.config import ConfigError, load_config

VALID = """
[source]
tracker_url = "http://127.0.0.1:8700/v3"
org_id = "1"
token_env = "SRC_TOKEN"
[target]
tracker_url = "http://127.0.0.1:8700/v3/"
cloud_org_id = "abc"
token_env = "DST_TOKEN"
[scope]
queues = ["TEST", "OPS"]
[mapping]
queues = { TEST = "NEW" }
default_user = "robot"
[staging]
path = "work/haul.db"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "haul.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_config_resolves_paths_relative_to_the_file(tmp_path: Path) -> None:
    """Staging paths are relative to the config file's folder, not the working directory."""
    config = load_config(write(tmp_path, VALID))
    assert config.staging_path == (tmp_path / "work" / "haul.db").resolve()
    assert config.target.tracker_url == "http://127.0.0.1:8700/v3"
    assert config.target.cloud_org_id == "abc" and config.target.org_id is None
    assert config.scope.queues == ("TEST", "OPS")
    assert config.mapping.queues == {"TEST": "NEW"}
    assert config.log_path.name == "haul.log"


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (
            lambda t: t.replace(
                'tracker_url = "http://127.0.0.1:8700/v3"\n', 'tracker_url = "http://x/v2"\n', 1
            ),
            "source.tracker_url",
        ),
        (lambda t: t.replace('org_id = "1"\n', "", 1), "source.org_id"),
        (
            lambda t: t.replace('org_id = "1"\n', 'org_id = "1"\ncloud_org_id = "2"\n', 1),
            "source.org_id",
        ),
        (lambda t: t.replace('queues = ["TEST", "OPS"]', "queues = []"), "scope.queues"),
        (lambda t: t.replace('token_env = "SRC_TOKEN"\n', ""), "source.token_env"),
        (lambda t: t.replace("[staging]", "[stagin]"), "stagin"),
        (lambda t: t + "\n[tuning]\nper_scroll = 5000\n", "tuning.per_scroll"),
        (
            lambda t: t.replace('default_user = "robot"', 'users_file = "missing.csv"'),
            "mapping.users_file",
        ),
    ],
)
def test_each_mistake_names_its_key(tmp_path: Path, change, key: str) -> None:
    """A config error says which key is wrong."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, change(VALID)))
    assert caught.value.key == key


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    """A missing file or broken TOML is a config error too, not a traceback."""
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[source\n"))


def test_token_comes_from_the_environment_only(tmp_path: Path) -> None:
    """The token is read from the named variable; a missing one names the variable."""
    config = load_config(write(tmp_path, VALID))
    assert config.source.token({"SRC_TOKEN": " abc "}) == "abc"
    with pytest.raises(ConfigError, match="SRC_TOKEN"):
        config.source.token({})
