"""`haul check`: before a migration, every finding ok, warning or error, each with its fix.

Probes each configured service and org with a read-only call; asks whether the target token may
use the admin import endpoints (`_findByUnique` with a value nobody uses: the sandbox, like the
admin import endpoints, refuses it to a non-admin; the real service's docs do not say, so a
refusal is certain and a pass is likely); checks the target's queues and dictionary keys and the
user mapping against what is staged; and the staging store's folder and disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from haul.connectors.errors import AuthError, HaulError
from haul.pipelines.config import Config, Endpoint
from haul.pipelines.services import all_services
from haul.state.store import StagingStore

USER_ENTITIES = ("issue", "comment", "worklog", "attachment", "link", "checklist")


@dataclass(frozen=True)
class Finding:
    """One thing checked: its level (ok, warning, error), what was found, and the fix."""

    level: str
    what: str
    fix: str = ""


NOTHING_STAGED = Finding(
    "warning",
    "nothing is staged: queues, dictionaries and users are not checked",
    "run haul extract, then haul check again",
)


async def _probe(
    service: Any, endpoint: Endpoint, environ: Mapping[str, str], config: Config
) -> tuple[list[Finding], Any]:
    name = f"{service.name} {endpoint.section} org {endpoint.org}"
    try:
        client = service.client(endpoint, environ, config.tuning)
    except HaulError as exc:
        return [Finding("error", f"{name}: {exc}", f"export {endpoint.token_env}")], None
    await client.__aenter__()
    try:
        await client.myself()
    except AuthError as exc:
        await client.__aexit__(None, None, None)
        return [Finding("error", f"{name}: the token is rejected ({exc})",
                        f"put a valid token for this org in {endpoint.token_env}")], None  # fmt: skip
    return [Finding("ok", f"{name}: the token is accepted")], client


async def _admin(client: Any, name: str) -> Finding:
    try:
        await client.find_by_unique("haul-check:no-such-unique")
    except AuthError:
        return Finding("error", f"{name}: the token may not use the admin import endpoints",
                       "use an org administrator's token for the target")  # fmt: skip
    return Finding("ok", f"{name}: the token may use the admin endpoints (read-only probe)")


def _user_refs(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            yield from _user_refs(item)
    elif isinstance(value, dict):
        if "/users/" in str(value.get("self", "")):
            yield value
        for item in value.values():
            yield from _user_refs(item)


async def _mapping(config: Config, client: Any, store: StagingStore) -> list[Finding]:
    from haul.pipelines.streams import Extractor
    from haul.pipelines.tracker.service import build_transform
    from haul.pipelines.tracker.streams import dictionary_streams
    from haul.pipelines.tracker.transform import TransformError

    if not store.count_records().get("issue"):
        return [NOTHING_STAGED]
    await Extractor(store, dictionary_streams(client, prefix="target.")).run()
    transform = build_transform(store, config)
    found: list[Finding] = []
    have = {row.source_id for row in store.iter_records("target.queue")}
    wanted = {transform.queues.queue(queue) for queue in config.scope.queues}
    for queue in sorted(wanted - have):
        found.append(
            Finding(
                "error", f"the target has no queue {queue}", "create it, or map the queue elsewhere"
            )
        )
    for kind, keys in transform.dictionaries.missing(
        r.raw for r in store.iter_records("issue")
    ).items():
        found.append(
            Finding(
                "error",
                f"the target lacks {kind} keys: {', '.join(keys)}",
                "create them in the target",
            )
        )
    if not found:
        found.append(
            Finding("ok", "the target has every queue and dictionary key the mapping needs")
        )
    refused: set[str] = set()
    for entity in USER_ENTITIES:
        for record in store.iter_records(entity):
            for ref in _user_refs(record.raw):
                try:
                    transform.users.login(ref)
                except TransformError:
                    refused.add(str(ref.get("display") or ref.get("id")))
    if refused:
        found.append(Finding("error", f"users with no target user: {', '.join(sorted(refused))}",
                             "map them in mapping.users_file or set mapping.default_user"))  # fmt: skip
    elif transform.users.unmapped:
        found.append(Finding("warning", "users that fall to the default user: " + ", ".join(sorted(transform.users.unmapped)),
                             "map them in mapping.users_file if they have target accounts"))  # fmt: skip
    else:
        found.append(Finding("ok", "every staged user maps to a target user"))
    return found


def _storage(config: Config) -> list[Finding]:
    folder = config.staging_path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return [
            Finding(
                "error",
                f"the staging folder {folder} is not writable: {exc}",
                "choose staging.path elsewhere",
            )
        ]
    needed = 0
    if config.staging_path.exists():
        with StagingStore.open(config.staging_path) as store:
            for record in store.iter_records("attachment"):
                if not (record.blob and store.blobs.exists(record.blob)):
                    needed += int(record.raw.get("size") or 0)
    free = shutil.disk_usage(folder).free
    if needed > free:
        return [
            Finding(
                "error",
                f"attachments need {needed} bytes, the disk has {free} free",
                "free space or move staging.path",
            )
        ]
    return [
        Finding(
            "ok",
            f"the staging folder is writable; {free // 2**20} MiB free, attachments to download need {needed // 2**20} MiB",
        )
    ]


async def run_check(config: Config, environ: Mapping[str, str] = os.environ) -> list[Finding]:
    """Every finding, in order: tokens, admin rights, mapping, storage."""
    findings = _storage(config)
    clients = []
    try:
        for endpoint in (config.source, config.target):
            if endpoint is None:
                continue
            for service in all_services():
                if not service.configured(endpoint):
                    continue
                probed, client = await _probe(service, endpoint, environ, config)
                findings += probed
                if client is not None:
                    clients.append(client)
                # admin rights and the mapping are the tracker's: its `_import` needs them and
                # its dictionaries are what the mapping maps (the wiki and forms have neither)
                if client is not None and endpoint is config.target and service.name == "tracker":
                    findings.append(
                        await _admin(client, f"{service.name} target org {endpoint.org}")
                    )
                    if config.staging_path.exists():
                        with StagingStore.open(config.staging_path) as store:
                            findings += await _mapping(config, client, store)
                    else:
                        findings.append(NOTHING_STAGED)
    finally:
        for client in clients:
            await client.__aexit__(None, None, None)
    return findings


def print_findings(findings: list[Finding], console: Console) -> int:
    """One line per finding; the exit status (1 when any is an error, else 0)."""
    for item in findings:
        fix = f" (fix: {item.fix})" if item.fix and item.level != "ok" else ""
        console.print(
            f"{item.level:7} {item.what}{fix}", markup=False, highlight=False, soft_wrap=True
        )
    errors = sum(item.level == "error" for item in findings)
    console.print(
        f"check: {errors} error(s), {sum(i.level == 'warning' for i in findings)} warning(s)",
        highlight=False,
    )
    return 1 if errors else 0
