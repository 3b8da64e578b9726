"""`haul check`: before a migration, every finding ok, warning or error, each with its fix.

Probes each configured service and org with a read-only call (one that cannot be reached
is an error within seconds, and its own checks are skipped), then asks each service for its
own findings on that side (`Service.checks`: the tracker's target, for instance, asks for
admin rights and checks the mapping against what is staged), then, where both sides answered,
for what comparing them finds (`Service.checks_across`: the tracker's queue permissions);
and checks the staging store's
folder and the disk room the files still to download need.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console

from haul.connectors.errors import AuthError, HaulError, UnreachableError
from haul.pipelines.config import Config, Endpoint, Tuning
from haul.pipelines.findings import Finding
from haul.pipelines.services import Service
from haul.state.private import make_private_folder
from haul.state.store import StagingStore


@dataclass(frozen=True)
class Probe:
    """What one read-only call found of a service's URL, org and token: the finding, the
    client left open for the checks that follow (None when it failed), and which setting to
    correct when it failed ("token": the token or the org; "url": the service's URL)."""

    finding: Finding
    client: Any = None
    wrong: Literal["", "token", "url"] = ""


async def probe(
    service: Service, endpoint: Endpoint, environ: Mapping[str, str], tuning: Tuning
) -> Probe:
    """Ask the service who the token is, as `haul check` does first; a client that answered
    is left open (the caller closes it)."""
    name = f"{service.name} {endpoint.section} org {endpoint.org}"
    try:
        client = service.client(endpoint, environ, tuning)
    except HaulError as exc:
        return Probe(
            Finding("error", f"{name}: {exc}", f"export {endpoint.token_env}"), None, "token"
        )
    await client.__aenter__()
    try:
        await client.myself()
    except AuthError as exc:
        await client.__aexit__(None, None, None)
        rejected = f"{name}: the token is rejected ({exc})"
        fix = f"put a valid token for this org in {endpoint.token_env}"
        return Probe(Finding("error", rejected, fix), None, "token")
    except UnreachableError as exc:  # seconds, not the outage patience: see connectors.http
        await client.__aexit__(None, None, None)
        fix = "correct the service's URL in the config"
        return Probe(Finding("error", f"{name}: {exc}", fix), None, "url")
    except BaseException:  # any other reply: the caller says it, the client closed first
        await client.__aexit__(None, None, None)
        raise
    return Probe(Finding("ok", f"{name}: the token is accepted"), client)


def _file_bytes_needed(store: StagingStore, services: Sequence[Service]) -> int:
    """Bytes of the staged files whose bytes are not in the blob store yet."""
    entities = {e.staged_as for s in services for e in s.entities if e.files}
    needed = 0
    for entity in sorted(entities):
        for record in store.iter_records(entity):
            if not (record.blob and store.blobs.exists(record.blob)):
                needed += _size(record.raw.get("size"))
    return needed


def _size(value: Any) -> int:
    try:
        return int(float(str(value or 0)))
    except ValueError:
        return 0


def _storage(config: Config, services: Sequence[Service]) -> list[Finding]:
    folder = config.staging_path.parent
    try:
        make_private_folder(folder)  # as the store would make it
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
            needed = _file_bytes_needed(store, services)
    free = shutil.disk_usage(folder).free
    if needed > free:
        return [
            Finding(
                "error",
                f"files to download need {needed} bytes, the disk has {free} free",
                "free space or move staging.path",
            )
        ]
    return [
        Finding(
            "ok",
            f"the staging folder is writable; {free // 2**20} MiB free, files to download need {needed // 2**20} MiB",
        )
    ]


async def run_check(
    config: Config, services: Sequence[Service], environ: Mapping[str, str] = os.environ
) -> list[Finding]:
    """Every finding, in order: storage, then per org and service its token and its own
    checks (the tracker's target: admin rights and the mapping)."""
    findings = _storage(config, services)
    clients = []
    opened: dict[tuple[str, str], Any] = {}  # (service, side) -> its client
    store = StagingStore.open(config.staging_path) if config.staging_path.exists() else None
    try:
        for side, endpoint in (("source", config.source), ("target", config.target)):
            if endpoint is None:
                continue
            for service in services:
                if not service.configured(endpoint):
                    continue
                probed = await probe(service, endpoint, environ, config.tuning)
                findings.append(probed.finding)
                if (client := probed.client) is not None:
                    clients.append(client)
                    opened[service.name, side] = client
                    findings += await service.checks(config, client, store, side)
        for service in services:
            source, target = (opened.get((service.name, side)) for side in ("source", "target"))
            if source is not None and target is not None:
                findings += await service.checks_across(config, source, target, store)
    finally:
        for client in clients:
            await client.__aexit__(None, None, None)
        if store is not None:
            store.close()
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
