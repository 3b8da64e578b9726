"""`haul demo`: the whole migration on the embedded sandbox, ending in a report.

The sandbox serves a seeded source org and an empty target org from one in-process server;
the demo writes a config for them (tokens stay in this process's environment, never in the
file), runs extract, load and the count check, and prints the per-entity table.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

from rich.console import Console

from haul.pipelines.config import load_config
from haul.pipelines.logs import configure_logging
from haul.pipelines.progress import LiveProgress
from haul.pipelines.report import print_run
from haul.pipelines.runner import run_all
from haul.sandbox.server import start_sandbox

TOKEN_ENV = "HAUL_DEMO_TOKEN"
CONFIG_TEMPLATE = """\
# Written by `haul demo` for the embedded sandbox; the token is in ${token_env} of the demo process.
[source]
tracker_url = "{tracker}"
org_id = "{source}"
token_env = "{token_env}"
read_rps = 2000       # the sandbox is local: no need to spare it

[target]
tracker_url = "{tracker}"
org_id = "{target}"
token_env = "{token_env}"
write_rps = 2000

[scope]
queues = [{queues}]

[mapping]
queues = {{ TEST = "NEW" }}
default_user = "robot"

[staging]
path = "haul.db"

[tuning]
concurrency = 32
"""


def write_demo_config(workdir: Path, info: dict, queues: list[str]) -> Path:
    path = workdir / "haul.toml"
    path.write_text(
        CONFIG_TEMPLATE.format(
            tracker=info["tracker"],
            source=info["orgs"]["source"],
            target=info["orgs"]["target"],
            token_env=TOKEN_ENV,
            queues=", ".join(f'"{q}"' for q in queues),
        ),
        encoding="utf-8",
    )
    return path


def run_demo(
    *, workdir: Path, size: str = "small", seed: int = 1, console: Console | None = None
) -> int:
    """Run the demo; 0 only when every staged record reached the target."""
    console = console or Console()
    if workdir.exists():
        shutil.rmtree(workdir)  # a new sandbox has new orgs: old staging would not match them
    workdir.mkdir(parents=True)
    started = time.monotonic()
    with start_sandbox(size=size, seed=seed) as sandbox:
        info = sandbox.info
        os.environ[TOKEN_ENV] = info["tokens"]["admin"]
        queues = source_queues(info)
        config = load_config(write_demo_config(workdir, info, queues))
        configure_logging(config.log_path)
        console.print(
            f"sandbox: {info['tracker']} ({size} org, seed {seed}); queues {', '.join(queues)}; "
            f"TEST is remapped to NEW",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        with LiveProgress() as progress:
            summary = asyncio.run(run_all(config, progress=progress))
    elapsed = time.monotonic() - started
    title = f"haul demo: {size} org migrated in {elapsed:.1f} s"
    print_run(summary.counts, summary.details, summary.unmapped_users, console, title)
    console.print(f"config, staging database and log: {workdir}/", markup=False, soft_wrap=True)
    verdict = (
        "counts match"
        if summary.complete
        else "COUNTS DO NOT MATCH: see haul failures --config " + str(workdir / "haul.toml")
    )
    console.print(verdict, markup=False, highlight=False)
    return 0 if summary.complete else 1


def source_queues(info: dict) -> list[str]:
    """The source org's queues, asked of the sandbox over HTTP like any client would."""
    import httpx

    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    reply = httpx.get(
        info["tracker"] + "/queues", headers=headers, params={"perPage": 100}, timeout=30
    )
    reply.raise_for_status()
    return [queue["key"] for queue in reply.json()]
