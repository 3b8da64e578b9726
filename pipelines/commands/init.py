"""`haul init`: write a commented `haul.toml`, for a running sandbox or for real services.

For a sandbox (`--sandbox URL_OR_FILE`), its JSON line says everything: read from a file, from
stdin (`-`), or asked of the sandbox at its tracker URL (`GET /_sandbox/info`). The file moves
the sandbox's source org into its target org, every queue, wiki tree and survey, and names the
sandbox's "empty" org as the other target. The sandbox's throwaway token is printed as an
`export` line for the shell, never written.

For real services (`init_ask`), each value is asked for with its default shown, or given by a
flag (with --no-input, for scripts); each service's URL, org and token are probed as `haul
check` probes them, and only what answered is written. Of the tokens, only the variables'
names are said.

Either way the text is read back by the config's own loader before it becomes the file, and
a file that exists is replaced only with --force.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import httpx

from haul.connectors.errors import HaulError
from haul.pipelines.config import ConfigError, load_config
from haul.pipelines.config.writing import Setting, Table, commented_toml

SANDBOX_TOKEN_ENV = "HAUL_SANDBOX_TOKEN"
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INFO_PATH = "/_sandbox/info"  # the sandbox's own route (sandbox/info.py)
INFO_TIMEOUT_S = 10.0
SERVICES = (("tracker", "tracker_url"), ("wiki", "wiki_url"), ("forms", "forms_url"))
URL_NOTES = {
    "tracker_url": "the tracker's API root",
    "wiki_url": "the wiki's API root",
    "forms_url": "the forms service's API root",
    "tracker_web_url": "where its issues show in a browser",
    "wiki_web_url": "where its pages show in a browser",
}
# what the source's table says of its keys, above it (the target's: that they are the same)
SIDE_KEYS = [
    "*_url: each service's API root; *_web_url: where the org's issues and pages show in a",
    "browser (links to the source's in texts are rewritten to the target's); org_id: the org",
    "(X-Org-ID); token_env: the variable that holds its token.",
]


class InitError(HaulError):
    """haul init cannot write the file: a value is missing or did not pass (exit 2)."""

    exit_code = 2


def refuse_to_overwrite(out: Path, force: bool) -> None:
    """Stop before asking anything when the file exists and --force is not given."""
    if out.exists() and not force:
        raise InitError(f"{out} exists: pass --force to replace it, or choose another --out")


def write_config_text(out: Path, text: str, force: bool) -> None:
    """Write `text` to `out` once the config's loader accepts it (in the same folder, so its
    relative paths mean what they will mean); a file that exists only with `force`."""
    refuse_to_overwrite(out, force)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, draft = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".toml")
    except OSError as exc:
        raise InitError(f"--out: cannot write in {out.parent}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        try:
            load_config(draft)
        except ConfigError as exc:  # a value given that the config refuses: say which
            raise InitError(f"not written: {exc}") from None
        os.replace(draft, out)
    finally:
        Path(draft).unlink(missing_ok=True)


def side_keys(section: str) -> list[str]:
    """The comment lines that explain a side's keys: in full above [source] only."""
    return SIDE_KEYS if section == "source" else ["Its keys are those of [source]."]


def export_lines(tokens: Mapping[str, str]) -> list[str]:
    """`export NAME=token` for each variable, quoted for the shell."""
    return [f"export {name}={shlex.quote(token)}" for name, token in tokens.items()]


def variable_problem(name: str) -> str | None:
    """Why `name` cannot be a token's variable, or None. The name itself is never repeated:
    what was typed where a variable's name belongs may be the token."""
    if not VARIABLE.fullmatch(name) or _token_like(name):
        return (
            "not a variable's name (letters, digits and _, as HAUL_SOURCE_TOKEN): give the "
            "name of the variable that holds the token, never the token"
        )
    return None


def _token_like(name: str) -> bool:
    """Long, with lower case and digits: a token pasted, not a name a person chose."""
    return len(name) >= 20 and any(c.islower() for c in name) and any(c.isdigit() for c in name)


def variable_name(name: str, flag: str) -> str:
    """A token's variable as a shell can export it; anything else is an error naming `flag`."""
    if (problem := variable_problem(name)) is not None:
        raise InitError(f"{flag}: {problem}")
    return name


# --- a sandbox ---------------------------------------------------------------------------


def read_sandbox_info(where: str, stdin: TextIO) -> dict[str, Any]:
    """The sandbox's JSON line: asked of the sandbox at its URL, or read from a file or `-`."""
    if where.startswith(("http://", "https://")):
        return _checked_info(_ask_sandbox(where), where)
    try:
        text = stdin.read() if where == "-" else Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InitError(f"--sandbox: cannot read {where}: {exc}") from None
    line = next((line for line in text.splitlines() if line.strip().startswith("{")), "")
    try:
        info = json.loads(line)
    except json.JSONDecodeError:
        raise InitError(
            f"--sandbox: {where} holds no JSON line of a sandbox (the line haul sandbox serve "
            "prints first), nor is it a URL"
        ) from None
    return _checked_info(info, where)


def _ask_sandbox(url: str) -> Any:
    try:
        origin = httpx.URL(url).copy_with(path=INFO_PATH, query=None, fragment=None)
        reply = httpx.get(origin, timeout=INFO_TIMEOUT_S)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise InitError(
            f"--sandbox: no sandbox answers at {url} ({type(exc).__name__}): is it running? "
            "haul sandbox serve prints its tracker URL"
        ) from None
    if reply.status_code != 200:
        raise InitError(
            f"--sandbox: {origin} answered {reply.status_code}: not a haul sandbox's tracker "
            "URL (give the tracker URL its JSON line names, or a file holding that line)"
        )
    try:
        return reply.json()
    except ValueError:
        raise InitError(f"--sandbox: {origin} did not answer JSON: not a haul sandbox") from None


def _checked_info(info: Any, where: str) -> dict[str, Any]:
    """`info` when it is a sandbox's JSON line (a tracker, source and target orgs, queues)."""
    needed = ("tracker", "orgs", "queues")
    if isinstance(info, dict) and all(key in info for key in needed):
        line: dict[str, Any] = info
        if isinstance(line["orgs"], dict) and {"source", "target"} <= set(line["orgs"]):
            return line
    raise InitError(
        f"--sandbox: what {where} gave is not a sandbox's JSON line (it names "
        f"{', '.join(needed)}, and a source and a target org)"
    )


def sandbox_config(info: Mapping[str, Any], token_envs: Mapping[str, str], staging: str) -> str:
    """The commented config that moves the sandbox's source org into its target org."""
    header = [
        f"haul.toml, written by haul init for the sandbox whose tracker is {info['tracker']}.",
        'It moves the sandbox\'s seeded "source" org into its "target" org: every queue, wiki',
        "tree and survey. Next: haul check, haul run, haul verify, each with --config and this",
        "file. No token is in it: each side names the variable that holds its token (token_env).",
    ]
    tables = [
        _sandbox_side(
            info,
            "source",
            token_envs["source"],
            ["[source]: the organisation haul reads from: the sandbox's seeded source org."],
        ),
        _sandbox_side(
            info,
            "target",
            token_envs["target"],
            [
                "[target]: the organisation haul writes to: the sandbox's target org (the",
                "source's queues plus NEW, the same users, no issues).",
            ],
            after=_empty_org(info),
        ),
        _sandbox_scope(info),
        Table(
            "mapping",
            [
                "[mapping]: how source names become target names. As written, every queue,",
                "user and wiki tree keeps its name; a user the target lacks becomes robot.",
            ],
            [Setting("default_user", "robot", "the sandbox's service account")],
            after=[
                'queues = { TEST = "NEW" }   # e.g.: TEST\'s issues go into NEW (TEST-12 -> NEW-12)'
            ],
        ),
        Table(
            "staging",
            ["[staging]: the local SQLite store every stage goes through (haul.log beside it)."],
            [Setting("path", staging, "relative to this file's folder")],
        ),
    ]
    return commented_toml(header, tables)


def _sandbox_side(
    info: Mapping[str, Any],
    side: str,
    token_env: str,
    about: list[str],
    after: list[str] | None = None,
) -> Table:
    web = (info.get("web") or {}).get(side, {})
    settings = []
    for service, key in SERVICES:
        if info.get(service):
            settings.append(Setting(key, info[service]))
            if web.get(service):
                settings.append(Setting(f"{service}_web_url", web[service]))
    settings.append(Setting("org_id", info["orgs"][side]))
    settings.append(Setting("token_env", token_env))
    return Table(side, [*about, *side_keys(side)], settings, after or [])


def _empty_org(info: Mapping[str, Any]) -> list[str]:
    """The sandbox's third org, written as the lines that would make it the target."""
    empty = (info.get("orgs") or {}).get("empty")
    if not empty:
        return []
    web = (info.get("web") or {}).get("empty", {})
    hints = [Setting("org_id", empty, hint=True)]
    hints += [
        Setting(f"{service}_web_url", web[service], hint=True)
        for service, _ in SERVICES
        if web.get(service) and info.get(service)
    ]
    return [
        'The sandbox also serves an "empty" org (a freshly created one: users and system values,',
        "no queues); to migrate into it instead, put these in place of the lines above:",
        *(hint.lines()[0][2:] for hint in hints),
    ]


def _sandbox_scope(info: Mapping[str, Any]) -> Table:
    settings = [Setting("queues", list(info["queues"].get("source", [])), "tracker queue keys")]
    if info.get("wiki") and (roots := (info.get("wiki_roots") or {}).get("source")):
        settings.append(Setting("wiki_roots", list(roots), "wiki subtrees (slugs)"))
    if info.get("forms") and (surveys := (info.get("surveys") or {}).get("source")):
        settings.append(Setting("surveys", list(surveys), "their answers are staged"))
    return Table(
        "scope",
        [
            "[scope]: what to move: every queue, wiki tree and survey of the source org. A",
            "survey's answers are staged (haul export writes them); a [[backfill]] rule would",
            "turn them into issues or rows of a wiki grid (see the README).",
        ],
        settings,
        after=[
            'entities = "all"           # also the planning layer: projects, portfolios, goals',
            'filters = "all"            # and saved filters, queries rewritten',
            'dashboards = "all"         # and dashboards',
        ],
    )


def sandbox_tokens(info: Mapping[str, Any], token_envs: Mapping[str, str]) -> dict[str, str]:
    """Each variable the file names -> the sandbox's admin token (a placeholder when the
    sandbox did not tell it: asked from another machine)."""
    token = (info.get("tokens") or {}).get("admin") or "<the admin token of its JSON line>"
    return {name: token for name in dict.fromkeys(token_envs.values())}


SANDBOX_FLAGS = ("source_token_env", "target_token_env", "staging")


def init_sandbox(
    where: str, out: Path, force: bool, given: Mapping[str, str | None], say: Callable[[str], None]
) -> list[str]:
    """Write the sandbox's config to `out`; the `export` lines its token variables need."""
    extra = [key for key, value in given.items() if value is not None and key not in SANDBOX_FLAGS]
    if extra:
        flags = ", ".join(f"--{key.replace('_', '-')}" for key in extra)
        raise InitError(
            f"--sandbox: the sandbox says its URLs, orgs and scope; {flags} goes only with real "
            "services (with --sandbox: --out, --force, --staging, --source-token-env, "
            "--target-token-env)"
        )
    info = read_sandbox_info(where, sys.stdin)
    source_env = variable_name(
        given.get("source_token_env") or SANDBOX_TOKEN_ENV, "--source-token-env"
    )
    target_env = variable_name(given.get("target_token_env") or source_env, "--target-token-env")
    envs = {"source": source_env, "target": target_env}
    write_config_text(out, sandbox_config(info, envs, given.get("staging") or "haul.db"), force)
    scope = _sandbox_scope(info).settings
    counted = ", ".join(
        f"{len(setting.value)} {setting.key.replace('_', ' ')}" for setting in scope
    )
    say(
        f"wrote {out}: the sandbox's source org ({counted}) into its target org; export "
        f"what haul init printed on stdout, then: haul check --config {out}, haul run, haul verify"
    )
    return export_lines(sandbox_tokens(info, envs))
