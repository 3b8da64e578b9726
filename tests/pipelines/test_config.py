"""The config file: what a valid one gives, and that every mistake names its key."""

from pathlib import Path

import pytest

from haul.connectors.errors import HaulError
from haul.pipelines.config import ConfigError, load_config

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it

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
        (
            lambda t: t.replace('default_user = "robot"', 'groups_file = "missing.csv"'),
            "mapping.groups_file",
        ),
    ],
)
def test_each_mistake_names_its_key(tmp_path: Path, change, key: str) -> None:
    """A config error says which key is wrong."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, change(VALID)))
    assert caught.value.key == key


def test_the_groups_file_is_relative_to_the_configs_folder(tmp_path: Path) -> None:
    """`[mapping] groups_file` (wiki page access) resolves beside the config, like users_file."""
    (tmp_path / "groups.csv").write_text("hr,people-ops\n", encoding="utf-8")
    text = VALID.replace('default_user = "robot"', 'groups_file = "groups.csv"')
    config = load_config(write(tmp_path, text))
    assert config.mapping.groups_file == tmp_path.resolve() / "groups.csv"


def test_a_path_starting_with_a_tilde_is_in_the_users_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`~/...` is the home folder (as in a shell), not a folder named `~` beside the config."""
    home = tmp_path / "home"
    (home / "maps").mkdir(parents=True)
    (home / "maps" / "users.csv").write_text("alice,alice\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    text = VALID.replace('path = "work/haul.db"', 'path = "~/haul/acme.db"').replace(
        'default_user = "robot"', 'default_user = "robot"\nusers_file = "~/maps/users.csv"'
    )
    (tmp_path / "configs").mkdir()
    config = load_config(write(tmp_path / "configs", text))
    assert config.staging_path == home / "haul" / "acme.db"
    assert config.log_path == home / "haul" / "acme.log"
    assert config.mapping.users_file == home / "maps" / "users.csv"


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


def test_every_problem_is_listed_at_once_by_its_key_path(tmp_path: Path) -> None:
    """Three mistakes, three problems, each with its dotted key path, unknown keys first."""
    text = VALID.replace('auth_scheme = "x"', "")
    text = text.replace('token_env = "SRC_TOKEN"', 'token_env = "SRC_TOKEN"\nauth_scheme = "Basic"')
    text = text.replace('queues = ["TEST", "OPS"]', 'queues = ["TEST"]\nqueus = ["X"]')
    text += "\n[tuning]\nconcurrency = 0\n"
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    keys = [key for key, _ in caught.value.problems]
    assert keys == ["scope.queus", "source.auth_scheme", "tuning.concurrency"]
    message = str(caught.value)
    assert message.startswith(
        "config error: 3 problems: scope.queus: unknown key (expected one of:"
    )
    assert "'OAuth' or 'Bearer'" in message and "must be > 0" in message


def test_surveys_and_backfill_rules_need_forms_and_their_target_service(tmp_path: Path) -> None:
    """A survey without a forms URL; a grid rule without a target wiki; a rule off scope."""
    other = "fedcba9876543210fedcba98"
    text = VALID.replace(
        'queues = ["TEST", "OPS"]', 'queues = ["TEST"]\nsurveys = ["0123456789abcdef01234567"]'
    )
    text += f'\n[[backfill]]\nsurvey = "{other}"\ninto = "wiki_grid"\npage = "a"\ntitle = "t"\n'
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    keys = [key for key, _ in caught.value.problems]
    assert keys == ["source.forms_url", "target.wiki_url", "backfill[0].survey"]
    assert f"{other} is not in scope.surveys" in str(caught.value)


def test_wiki_roots_need_the_wiki_on_both_sides_and_mapped_roots_in_scope(tmp_path: Path) -> None:
    """Wiki roots without a wiki URL, and a mapping of a root that is not moved: all named."""
    text = VALID.replace('queues = ["TEST", "OPS"]', 'queues = ["TEST"]\nwiki_roots = ["team"]')
    text = text.replace("[mapping]", '[mapping]\nwiki_roots = { "other" = "x" }')
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    keys = [key for key, _ in caught.value.problems]
    assert keys == ["source.wiki_url", "target.wiki_url", "mapping.wiki_roots"]
    assert "other is not in scope.wiki_roots (team)" in str(caught.value)


def test_a_wiki_only_config_needs_no_tracker(tmp_path: Path) -> None:
    text = (
        '[source]\nwiki_url = "https://wiki.example/v1"\norg_id = "1"\ntoken_env = "T"\n'
        '[target]\nwiki_url = "https://wiki.example/v1"\norg_id = "2"\ntoken_env = "T"\n'
        '[scope]\nwiki_roots = ["team/handbook"]\n'
        '[mapping]\nwiki_roots = { "team/handbook" = "archive/handbook" }\n'
        '[staging]\npath = "haul.db"\n'
    )
    config = load_config(write(tmp_path, text))
    assert config.scope.wiki_roots == ("team/handbook",)
    assert config.mapping.wiki_roots == {"team/handbook": "archive/handbook"}


@pytest.mark.parametrize(
    ("second_rule", "named"),
    [
        ('summary = "{subject}"\n', "backfill[1].queue"),  # into the tracker without a queue
        ('summary = "{subject"\n', "backfill[1].summary"),  # a template that does not parse
    ],
)
def test_a_backfill_rule_names_its_index_and_key(
    tmp_path: Path, second_rule: str, named: str
) -> None:
    """A wrong [[backfill]] rule is named by its index and key, the good one before it not."""
    text = VALID + (
        '\n[[backfill]]\nsurvey = "0123456789abcdef01234567"\ninto = "tracker"\n'
        'summary = "{subject}"\nqueue = "SUP"\n'
        '\n[[backfill]]\nsurvey = "0123456789abcdef01234567"\ninto = "tracker"\n' + second_rule
    )
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert [key for key, _ in caught.value.problems] == [named]


def test_durations_read_as_seconds_and_bad_ones_are_named(tmp_path: Path) -> None:
    """`15m`, `90s`, `1h`; `soon` is a config error naming the key."""
    config = load_config(write(tmp_path, VALID + '\n[tuning]\nrate_limit_patience = "1h"\n'))
    assert config.tuning.rate_limit_patience == 3600.0
    assert config.tuning.outage_patience == 300.0
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, VALID + '\n[tuning]\noutage_patience = "soon"\n'))
    assert caught.value.key == "tuning.outage_patience"


def test_a_config_without_a_target_serves_a_source_only_command(tmp_path: Path) -> None:
    """A nightly export needs only the source: no [target] parses; a load asks for one."""
    text = VALID[: VALID.index("[target]")] + VALID[VALID.index("[scope]") :]
    config = load_config(write(tmp_path, text))
    assert config.target is None
    with pytest.raises(ConfigError, match="missing section \\[target\\]: haul load"):
        config.require_target("load")


def test_changelog_auto_stages_it_unless_the_config_is_a_migrations(tmp_path: Path) -> None:
    """ "auto" (the default) leaves the changelog out of a config with a [target] and no
    [export], stages it for an export's config; true and false are kept as they are."""
    source_only = VALID[: VALID.index("[target]")] + VALID[VALID.index("[scope]") :]
    cases = {
        VALID: False,
        VALID + "\n[export]\n": True,
        source_only: True,
        VALID.replace("[mapping]", "changelog = true\n[mapping]"): True,
        (VALID + "\n[export]\n").replace("[mapping]", "changelog = false\n[mapping]"): False,
    }
    reasons = []
    for text, staged in cases.items():
        config = load_config(write(tmp_path, text))
        wanted, because = config.stages_changelog
        assert wanted is staged, text
        reasons.append(because)
    assert reasons[0].startswith('[scope] changelog = "auto" skips it in a config with [target]')
    assert reasons[3:] == ["[scope] changelog = true", "[scope] changelog = false"]
    with pytest.raises(ConfigError) as caught:
        load_config(
            write(tmp_path, VALID.replace("[mapping]", 'changelog = "sometimes"\n[mapping]'))
        )
    assert caught.value.key == "scope.changelog"


def test_wiki_and_forms_keys_are_checked_too(tmp_path: Path) -> None:
    """Wiki roots are slugs, surveys are 24-hex ids or "all", service URLs end in /v1."""
    text = VALID.replace('queues = ["TEST", "OPS"]', 'wiki_roots = ["/team/"]\nsurveys = "all"')
    text = text.replace('org_id = "1"', 'org_id = "1"\nwiki_url = "http://w/v2"', 1)
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    keys = dict(caught.value.problems)
    assert "must end in /v1" in keys["source.wiki_url"]
    assert "not a slug" in keys["scope.wiki_roots[0]"]


@pytest.mark.parametrize("key", ["users_file", "groups_file"])
def test_a_mapping_file_that_maps_one_source_twice_stops_the_config(
    tmp_path: Path, key: str
) -> None:
    """Every command that loads the config (`haul check` too) stops with exit 2 naming the
    source and both lines, even when the two lines agree: the file is read with the config,
    not first by the stage that maps."""
    (tmp_path / "map.csv").write_text("alice,alice.new\nbob,bob\nalice,alice.new\n", "utf-8")
    text = VALID.replace('default_user = "robot"', f'{key} = "map.csv"')
    with pytest.raises(HaulError) as caught:
        load_config(write(tmp_path, text))
    message = str(caught.value)
    assert f"mapping.{key}" in message and "'alice'" in message
    assert "map.csv:1" in message and "map.csv:3" in message
    assert caught.value.exit_code == 2
