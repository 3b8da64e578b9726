"""`haul init` against services that are not a sandbox's JSON line: each value asked for with
its default shown (or given by a flag), probed as `haul check` probes it, asked again when it
does not pass; only what passed is written, and of a token only its variable's name.

The services here are the sandbox's, reached only through the answers a person would type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config import load_config
from tests.helpers.cli_fixtures import files_containing, invoke_haul

NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens there


def answers(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_each_value_is_probed_and_asked_again_until_it_passes(sandbox: Any, tmp_path: Path) -> None:
    """A tracker URL where nothing answers is said and asked again, so is a rejected token;
    the file holds what passed, names the token's variable, and loads; the token typed is in
    no file and no output."""
    info, config = sandbox.info, tmp_path / "haul.toml"
    token = info["tokens"]["admin"]
    typed = answers(
        f"{NOWHERE}/v3", "-", "-",  # source: a tracker where nothing listens, no wiki, no forms
        info["orgs"]["source"], "SRC_TOKEN", "not-the-token",  # rejected
        info["tracker"],  # asked again: the tracker's URL
        info["orgs"]["source"], "SRC_TOKEN", token,  # asked again: the org and the token
        "y", "", "", "",  # a target, on the source's services (the defaults)
        info["orgs"]["target"], "DST_TOKEN",  # its variable is set: no token asked
        "DEV,OPS",  # queues
        "",  # staging: the default
    )  # fmt: skip

    done = invoke_haul(
        "init", "--out", config, input=typed, env={"SRC_TOKEN": None, "DST_TOKEN": token}
    )

    assert done.exit_code == 0, done.output
    assert "[HAUL_SOURCE_TOKEN]" in done.stdout  # a default is shown
    assert f"{NOWHERE}/v3" in done.stderr and "correct the service's URL" in done.stderr
    assert "the token is rejected" in done.stderr
    assert "SRC_TOKEN, DST_TOKEN" in done.stderr
    written = load_config(config)
    assert written.source.tracker_url == info["tracker"]
    assert (written.source.org_id, written.source.token_env) == (
        info["orgs"]["source"],
        "SRC_TOKEN",
    )
    assert written.source.wiki_url is None and written.source.forms_url is None
    assert written.target is not None
    assert (written.target.org_id, written.target.token_env) == (
        info["orgs"]["target"],
        "DST_TOKEN",
    )
    assert written.scope.queues == ("DEV", "OPS")
    assert NOWHERE not in config.read_text()
    assert token not in done.output and "not-the-token" not in done.output
    assert files_containing(tmp_path, token) == []


def test_no_input_takes_the_flags_and_stops_on_what_does_not_pass(
    sandbox: Any, tmp_path: Path
) -> None:
    """With --no-input nothing is asked: flags that pass write the file; a token the service
    rejects, a token given where its variable's name belongs (not repeated), or a value not
    given, is exit 2 naming its flag, and so is a draft haul check
    finds an error in (a queue the source lacks): nothing is written."""
    info, config = sandbox.info, tmp_path / "haul.toml"
    flags = [
        "init", "--no-input", "--out", config,
        "--source-tracker-url", info["tracker"], "--source-wiki-url", info["wiki"],
        "--source-org", info["orgs"]["source"], "--source-token-env", "SRC_TOKEN",
        "--target-org", info["orgs"]["target"], "--target-token-env", "SRC_TOKEN",
        "--queues", "DEV", "--wiki-roots", info["wiki_roots"]["source"][0],
    ]  # fmt: skip

    pasted = [info["tokens"]["admin"] if flag == "SRC_TOKEN" else flag for flag in flags]
    mistaken = invoke_haul(*pasted, env={"SRC_TOKEN": info["tokens"]["admin"]})
    assert mistaken.exit_code == 2
    assert "--source-token-env: not a variable's name" in mistaken.stderr
    assert info["tokens"]["admin"] not in mistaken.output
    assert not config.exists()

    rejected = invoke_haul(*flags, env={"SRC_TOKEN": "not-the-token"})
    assert rejected.exit_code == 2
    assert "--source-token-env" in rejected.stderr and "rejected" in rejected.stderr
    assert not config.exists()

    unnamed = invoke_haul(*flags[:-4], env={"SRC_TOKEN": info["tokens"]["admin"]})
    assert unnamed.exit_code == 2
    assert "--queues" in unnamed.stderr
    assert not config.exists()

    no_such_queue = [*flags[:-3], "NOPE", *flags[-2:]]
    checked = invoke_haul(*no_such_queue, env={"SRC_TOKEN": info["tokens"]["admin"]})
    assert checked.exit_code == 2
    assert "not written" in checked.stderr and "NOPE is not a queue" in checked.stderr
    assert not config.exists()

    done = invoke_haul(*flags, env={"SRC_TOKEN": info["tokens"]["admin"]})
    assert done.exit_code == 0, done.output
    written = load_config(config)
    assert written.target is not None
    assert written.target.wiki_url == info["wiki"]  # the source's URLs, by default
    assert written.scope.wiki_roots == (info["wiki_roots"]["source"][0],)


@pytest.mark.fast
def test_an_existing_file_is_kept_and_nothing_asked(tmp_path: Path) -> None:
    """A file at --out stops init before its first question (exit 2)."""
    config = tmp_path / "haul.toml"
    config.write_text("# mine\n")

    done = invoke_haul("init", "--out", config, input="")

    assert done.exit_code == 2
    assert "exists: pass --force" in done.stderr
    assert done.stdout == ""
    assert config.read_text() == "# mine\n"
