"""A haul config for a running sandbox, written from the one JSON line the sandbox prints.

The demo, the tests and the benchmarks all migrate a sandbox's source org into its target
org; this is the one place that turns the JSON line (URLs, org ids, source queues) into a
config file for them (`haul init --sandbox` writes a commented one for people:
`commands.init`). Tokens are named (`token_env`), never written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haul.pipelines.config.writing import toml_list, toml_table, toml_value

SERVICE_URLS = (("tracker", "tracker_url"), ("wiki", "wiki_url"), ("forms", "forms_url"))


@dataclass(frozen=True)
class SandboxConfig:
    """What to write beyond the sandbox's own facts; every field has the usual default."""

    source_token_env: str
    target_token_env: str | None = None  # None: the same variable as the source
    queues: list[str] | None = None  # None: every source queue of the JSON line
    queue_mapping: Mapping[str, str] = field(default_factory=lambda: {"TEST": "NEW"})
    mapping_extra: Mapping[str, Any] = field(default_factory=lambda: {"default_user": "robot"})
    staging_path: str = "haul.db"
    endpoint_extra: Mapping[str, Any] = field(default_factory=dict)  # read_rps, ...
    sections: str = ""  # extra TOML appended as it is ([tuning] ...)
    with_target: bool = True
    services: tuple[str, ...] = ("tracker",)
    wiki_roots: list[str] | None = None  # None: every source root of the JSON line
    wiki_mapping: Mapping[str, str] = field(default_factory=dict)
    surveys: list[str] | None = None  # None: every source survey of the JSON line
    scope_extra: Mapping[str, Any] = field(default_factory=dict)  # changelog = false, ...


def sandbox_config_text(info: Mapping[str, Any], options: SandboxConfig) -> str:
    """The TOML text of a config that moves the sandbox's source org into its target org."""
    queues = options.queues if options.queues is not None else info["queues"]["source"]
    lines = _endpoint("source", info, options.source_token_env, options)
    if options.with_target:
        lines += _endpoint(
            "target", info, options.target_token_env or options.source_token_env, options
        )
    lines += ["[scope]"]
    if "tracker" in options.services:
        lines.append(f"queues = {toml_list(queues)}")
    wiki = "wiki" in options.services and info.get("wiki")
    if wiki:
        roots = options.wiki_roots
        lines.append(
            f"wiki_roots = {toml_list(roots if roots is not None else info['wiki_roots']['source'])}"
        )
    if "forms" in options.services and info.get("forms"):
        surveys = options.surveys if options.surveys is not None else info["surveys"]["source"]
        lines.append(f"surveys = {toml_list(surveys)}")
    lines += [f"{key} = {toml_value(value)}" for key, value in options.scope_extra.items()]
    lines += ["", "[mapping]", f"queues = {toml_table(options.queue_mapping)}"]
    if wiki and options.wiki_mapping:
        lines.append(f"wiki_roots = {toml_table(options.wiki_mapping)}")
    lines += [f"{key} = {toml_value(value)}" for key, value in options.mapping_extra.items()]
    lines += ["", "[staging]", f"path = {toml_value(options.staging_path)}", ""]
    return "\n".join(lines) + options.sections


def write_sandbox_config(directory: Path, info: Mapping[str, Any], options: SandboxConfig) -> Path:
    """Write `haul.toml` in `directory` (created if needed) and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "haul.toml"
    path.write_text(sandbox_config_text(info, options), encoding="utf-8")
    return path


def _endpoint(
    section: str, info: Mapping[str, Any], token_env: str, options: SandboxConfig
) -> list[str]:
    lines = [f"[{section}]"]
    for service, key in SERVICE_URLS:
        if service in options.services and info.get(service):
            lines.append(f"{key} = {toml_value(info[service])}")
            web = (info.get("web") or {}).get(section, {}).get(service)
            if web:  # the org's web host, which its texts link to
                lines.append(f"{service}_web_url = {toml_value(web)}")
    lines.append(f"org_id = {toml_value(info['orgs'][section])}")
    lines.append(f"token_env = {toml_value(token_env)}")
    lines += [f"{key} = {toml_value(value)}" for key, value in options.endpoint_extra.items()]
    return [*lines, ""]
