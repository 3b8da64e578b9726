"""`haul init` against real services: each value asked for with its default shown, or given by
a flag; each side's URLs, org and token probed as `haul check` probes them (`check.probe`);
only what answered is written.

A value a probe refuses is said and asked again (a URL that does not answer: that URL, or `-`
to leave the service out; a rejected token: the org and the token); with --no-input nothing is
asked: a flag's value or the default stands, and a value that does not pass is an error (exit
2) naming its flag. A token is never asked for when its variable is set; when it is not, it is
asked for hidden and used for the probes only: of the tokens, the file and the console name
only the variables.

Last, the whole draft is checked as `haul check` checks a config (`run_check`): an error there
is said, and the file is written only when the person says so (never with --no-input).
"""

from __future__ import annotations

import asyncio
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from haul.connectors.errors import HaulError
from haul.pipelines.commands.check import probe, run_check
from haul.pipelines.commands.init import (
    SERVICES,
    URL_NOTES,
    InitError,
    side_keys,
    variable_problem,
)
from haul.pipelines.config import Endpoint, Tuning, parse_config
from haul.pipelines.config.types import describe_errors, http_url
from haul.pipelines.config.writing import Setting, Table, commented_toml
from haul.pipelines.findings import Finding
from haul.pipelines.services import Service

API_ROOTS = {"tracker_url": "/v3", "wiki_url": "/v1", "forms_url": "/v1"}
SCOPE_KEYS = {"tracker_url": "queues", "wiki_url": "wiki_roots", "forms_url": "surveys"}
SCOPE_QUESTIONS = {
    "queues": "tracker queue keys to move, comma-separated",
    "wiki_roots": "wiki subtrees (slugs) to move, comma-separated",
    "surveys": 'survey ids whose answers to stage, comma-separated, or "all"',
}
# a probe is one read: an unanswered one is said in seconds, not after an outage's patience
PROBE_TUNING = Tuning(outage_patience=15.0, rate_limit_patience=60.0, request_timeout=30.0)
ABOUT = {
    "source": "the organisation haul reads from",
    "target": "the organisation haul writes to",
}

Say = Callable[[str], None]


@dataclass
class Asker:
    """Asks each question once, its default shown; a flag's value answers it. With
    `interactive` false nothing is asked, and a value that does not pass ends the command."""

    given: dict[str, str | None]
    interactive: bool
    say: Say
    services: Sequence[Service]  # each is probed where the answers configure it

    def ask(self, key: str, question: str, default: str | None) -> str:
        value = self.given.pop(key, None)
        if value is not None:
            return value.strip()
        if not self.interactive:
            if default is None:
                raise InitError(f"--{_flag(key)}: give it ({question}); --no-input asks nothing")
            return default
        answer: str = click.prompt(question, default=default, show_default=bool(default))
        return answer.strip()

    def refused(self, key: str, problem: str) -> None:
        """Say why a value did not pass; with --no-input, stop (exit 2) naming its flag."""
        if not self.interactive:
            raise InitError(f"--{_flag(key)}: {problem}")
        self.say(f"  {problem}")


@dataclass
class Side:
    """One organisation as it answered: its services' URLs, its org, its token's variable."""

    section: str
    urls: dict[str, str] = field(default_factory=dict)
    org: str = ""
    token_env: str = ""

    def endpoint(self) -> Endpoint:
        return Endpoint.model_validate(
            {**self.urls, "org_id": self.org, "token_env": self.token_env, "section": self.section}
        )


def ask_config(
    given: dict[str, str | None],
    *,
    interactive: bool,
    out: Path,
    say: Say,
    services: Sequence[Service],
    environ: Mapping[str, str] = os.environ,
) -> tuple[str, list[str]]:
    """The text of the config, every value asked (or given) and probed, and the variables
    its tokens come from."""
    asker = Asker(given, interactive, say, services)
    tokens = dict(environ)  # a token asked for lives here, for the probes only
    source = ask_side(asker, "source", None, tokens)
    target = None
    if _wants_target(asker, given):
        target = ask_side(asker, "target", source, tokens)
    scope = ask_scope(asker, source)
    staging = asker.ask(
        "staging", "the staging database (relative to the config's folder)", "haul.db"
    )
    text = real_config(source, target, scope, staging)
    _check_draft(text, out, tokens, asker)
    names = [source.token_env] + ([target.token_env] if target else [])
    return text, list(dict.fromkeys(names))


def _wants_target(asker: Asker, given: Mapping[str, str | None]) -> bool:
    named = any(value is not None for key, value in given.items() if key.startswith("target_"))
    if named or not asker.interactive:
        return named
    return click.confirm(
        "A target org to migrate into (no: the config only extracts)?", default=True
    )


def ask_side(asker: Asker, section: str, like: Side | None, tokens: dict[str, str]) -> Side:
    """One side's URLs, org and token variable, asked until every service answers."""
    asker.say(f"[{section}]: {ABOUT[section]}")
    side = Side(section)
    for _, key in SERVICES:
        _ask_url(asker, side, key, like.urls.get(key) if like else None)
    while not side.urls:
        asker.refused(f"{section}_tracker_url", "give the URL of at least one service")
        for _, key in SERVICES:
            _ask_url(asker, side, key, None)
    _ask_access(asker, side, like, tokens)
    while True:
        wrong = asyncio.run(_probe_side(side, tokens, asker))
        if not wrong:
            return side
        for key in wrong:
            if key == "token":
                _ask_access(asker, side, side, tokens, again=True)
            else:
                side.urls.pop(key, None)
                _ask_url(asker, side, key, None)
        if not side.urls:
            raise InitError(f"[{section}]: no service left to write (each was left out)")


def _ask_url(asker: Asker, side: Side, key: str, default: str | None) -> None:
    root = API_ROOTS[key]
    flag = f"{side.section}_{key}"
    while True:
        url = asker.ask(flag, f"{URL_NOTES[key]}, ending in {root} (- for none)", default or "-")
        if url in ("-", ""):
            side.urls.pop(key, None)
            return
        try:
            side.urls[key] = http_url(url, root)
            return
        except ValueError as exc:
            asker.refused(flag, f"{url}: {exc}")


def _ask_access(
    asker: Asker, side: Side, like: Side | None, tokens: dict[str, str], *, again: bool = False
) -> None:
    section = side.section
    # the org is the one value the other side's does not suggest
    again_org = like.org if like is not None and like.section == section else None
    side.org = asker.ask(f"{section}_org", "the org id (X-Org-ID)", again_org)
    default_env = side.token_env or f"HAUL_{section.upper()}_TOKEN"
    while True:
        side.token_env = asker.ask(
            f"{section}_token_env", "the environment variable that holds its token", default_env
        )
        if (problem := variable_problem(side.token_env)) is None:
            break
        asker.refused(f"{section}_token_env", problem)
    if asker.interactive and (again or not tokens.get(side.token_env, "").strip()):
        set_or_not = "is set" if tokens.get(side.token_env) else "is not set"
        tokens[side.token_env] = click.prompt(
            f"its token ({side.token_env} {set_or_not}; used to probe, never written)",
            hide_input=True,
            default=tokens.get(side.token_env) or None,
            show_default=False,
        )


async def _probe_side(side: Side, tokens: Mapping[str, str], asker: Asker) -> list[str]:
    """Probe each service of the side; what to ask again: "token", or a URL's key."""
    try:
        endpoint = side.endpoint()
    except ValidationError as exc:  # an org id or a variable's name the config refuses
        where, problem = describe_errors(exc, Endpoint)[0]
        asker.refused(f"{side.section}_org", f"{where}: {problem}")
        return ["token"]
    wrong: list[str] = []
    for service in asker.services:
        if not service.configured(endpoint):
            continue
        try:
            probed = await probe(service, endpoint, tokens, PROBE_TUNING)
        except HaulError as exc:  # it answered, but not as the service does: a wrong URL
            probed_key = _url_key(service.name)
            asker.refused(f"{side.section}_{probed_key}", f"{service.name}: {exc}")
            wrong.append(probed_key)
            continue
        if probed.client is not None:
            await probed.client.__aexit__(None, None, None)
            asker.say(f"  ok: {probed.finding.what}")
            continue
        key = "token" if probed.wrong == "token" else _url_key(service.name)
        flag = f"{side.section}_token_env" if key == "token" else f"{side.section}_{key}"
        asker.refused(flag, f"{probed.finding.what} (fix: {probed.finding.fix})")
        if key not in wrong:
            wrong.append(key)
    return wrong


def _url_key(service: str) -> str:
    return dict(SERVICES)[service]


def ask_scope(asker: Asker, source: Side) -> dict[str, list[str] | str]:
    """What to move, for each service the source answered on; at least one thing."""
    while True:
        scope: dict[str, list[str] | str] = {}
        for _, key in SERVICES:
            if key not in source.urls:
                continue
            name = SCOPE_KEYS[key]
            answer = asker.ask(name, SCOPE_QUESTIONS[name], "")
            values = [value.strip() for value in answer.split(",") if value.strip()]
            if values:
                scope[name] = "all" if values == ["all"] and name == "surveys" else values
        if scope:
            return scope
        asker.refused("queues", "give at least one queue, wiki subtree or survey to move")


def _check_draft(text: str, out: Path, tokens: Mapping[str, str], asker: Asker) -> None:
    """Check the whole draft as haul check does; its errors are said, and (asked) stop it."""
    config = parse_config(tomllib.loads(text), base_dir=(out.parent or Path(".")))
    findings = asyncio.run(run_check(config, asker.services, tokens))
    errors = [item for item in findings if item.level == "error"]
    for item in errors:
        asker.say(f"  check: {_finding_line(item)}")
    if not errors:
        warnings = sum(item.level == "warning" for item in findings)
        asker.say(f"  check: no error, {warnings} warning(s) (haul check lists them)")
        return
    if not asker.interactive:
        raise InitError(f"not written: haul check finds {len(errors)} error(s); the first: "
                        f"{_finding_line(errors[0])}")  # fmt: skip
    if not click.confirm("Write it all the same?", default=False):
        raise InitError("not written: fix what haul check found, then haul init again")


def _finding_line(item: Finding) -> str:
    return f"{item.what} (fix: {item.fix})" if item.fix else item.what


def real_config(source: Side, target: Side | None, scope: Mapping[str, Any], staging: str) -> str:
    """The commented text of a config for real services, from what answered."""
    header = [
        "haul.toml, written by haul init: every value in it answered when asked.",
        "No token is in it: each side names the variable that holds its token (token_env).",
        "Next: haul check --config FILE, then haul run and haul verify.",
    ]
    tables = [_side_table(source, [f"[source]: {ABOUT['source']}."])]
    if target is not None:
        tables.append(_side_table(target, [f"[target]: {ABOUT['target']}."]))
    tables.append(
        Table(
            "scope",
            ["[scope]: what to move."],
            [Setting(key, value) for key, value in scope.items()],
        )
    )
    tables.append(
        Table(
            "mapping",
            ["[mapping]: how source names become target names (as written: the same names)."],
            [],
            after=[
                'queues = { OLD = "NEW" }   # e.g.: OLD\'s issues go into NEW',
                'users_file = "users.csv"   # rows of: source login,target login',
                'default_user = "robot"     # users the target lacks',
            ],
        )
    )
    tables.append(
        Table(
            "staging",
            ["[staging]: the local SQLite store every stage goes through (haul.log beside it)."],
            [Setting("path", staging, "relative to this file's folder")],
        )
    )
    return commented_toml(header, tables)


def _side_table(side: Side, about: list[str]) -> Table:
    settings = [Setting(key, url) for key, url in side.urls.items()]
    settings += [Setting("org_id", side.org), Setting("token_env", side.token_env)]
    web_hints = [
        f'{service}_web_url = "https://..."   # give both sides\' or neither'
        for service, key in SERVICES
        if key in side.urls and f"{service}_web_url" in URL_NOTES
    ]
    return Table(side.section, [*about, *side_keys(side.section)], settings, after=web_hints)


def _flag(key: str) -> str:
    return key.replace("_", "-")
