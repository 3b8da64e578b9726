"""`haul demo`: the whole migration on the embedded sandbox, ending in a report.

The sandbox serves a seeded source org and an empty target org from one in-process server;
the demo writes a config for them (every queue, every wiki tree, two surveys back-filled) (tokens stay in this process's environment, never in the
file), runs extract, load and the count check, then verify (every loaded record compared
with the target by content), prints the per-entity table and verify's, and says where the
report and the verify CSV are.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify, write_csv
from haul.pipelines.commands.verify_cli import print_result
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.logs import configure_logging
from haul.pipelines.progress import LiveProgress
from haul.pipelines.registry import services
from haul.pipelines.report.counts import print_run
from haul.pipelines.report.run import Headline, headline
from haul.sandbox.server import start_sandbox

TOKEN_ENV = "HAUL_DEMO_TOKEN"
GRID_PAGE = "team/runbooks"  # where the feedback survey's grid goes (a page the demo migrates)


def demo_options(info: dict[str, Any]) -> SandboxConfig:
    """All three services: every queue with its planning layer (projects, portfolios, goals,
    saved filters, dashboards, remote links, autoactions), every wiki tree (the handbook moved to archive/), two surveys back-filled
    (support requests into issues of the target's TEST queue, left empty by TEST -> NEW;
    feedback into a grid)."""
    support, _, feedback = info["surveys"]["source"]
    backfill = (
        f'\n[[backfill]]\nsurvey = "{support}"\ninto = "tracker"\nqueue = "TEST"\n'
        'summary = "{subject} ({email})"\ncreated_by = "{email}"\n'
        'fields = { priority = "{urgency}" }\n'
        'values = { priority = { low = "minor", high = "critical" } }\n'
        f'\n[[backfill]]\nsurvey = "{feedback}"\ninto = "wiki_grid"\npage = "{GRID_PAGE}"\n'
        'title = "Quarterly feedback"\n'
    )
    return SandboxConfig(
        source_token_env=TOKEN_ENV,
        # the sandbox is local: no need to spare it
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        sections="[tuning]\nconcurrency = 32\n" + backfill,
        services=("forms", "tracker", "wiki"),
        wiki_mapping={"team/handbook": "archive/handbook"},
        surveys=[support, feedback],
        scope_extra={"entities": "all", "filters": "all", "dashboards": "all"},  # planning layer
    )


def run_demo(
    *, workdir: Path, size: str = "small", seed: int = 1, console: Console | None = None
) -> int:
    """Run the demo; 0 only when every staged record reached the target and verify found it
    matching (see `demo_status`)."""
    console = console or Console()
    if workdir.exists():
        shutil.rmtree(workdir)  # a new sandbox has new orgs: old staging would not match them
    workdir.mkdir(parents=True)
    started = time.monotonic()
    with start_sandbox(size=size, seed=seed) as sandbox:
        info = sandbox.info
        os.environ[TOKEN_ENV] = info["tokens"]["admin"]
        queues = info["queues"]["source"]
        config = load_config(write_sandbox_config(workdir, info, demo_options(info)))
        configure_logging(config.log_path)
        console.print(
            f"sandbox: {info['tracker']}, {info['wiki']}, {info['forms']} ({size} org, seed "
            f"{seed}); queues {', '.join(queues)} (TEST becomes NEW); wiki trees "
            f"{', '.join(info['wiki_roots']['source'])} (team/handbook becomes archive/handbook); "
            "support requests back-filled into the target's TEST, feedback into a grid",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        with LiveProgress() as progress:
            summary = asyncio.run(run_all(config, services(), progress=progress))
        migrated = time.monotonic() - started
        checked = asyncio.run(
            verify(config, services())
        )  # the report is written again, with its result
    elapsed = time.monotonic() - started
    title = f"haul demo: {size} org migrated in {migrated:.1f} s"
    print_run(summary.counts, summary.details, summary.unmapped_users, console, title)
    print_result(checked, console)
    differences = config.staging_path.with_name("verify.csv")
    write_csv(differences, checked.differences)
    config_path = workdir / "haul.toml"
    lines = [
        f"config, staging database and log: {workdir}/",
        f"report: {config.staging_path.with_name('report.html')} (figures: report.json beside it)",
        "counts match"
        if summary.complete
        else f"COUNTS DO NOT MATCH: see haul failures --config {config_path}",
        f"verified in {elapsed - migrated:.1f} s: the target matches the staged data"
        if checked.ok
        else f"VERIFY FOUND {len(checked.differences)} DIFFERENCE(S): see {differences}",
    ]
    verdict = headline("ok", summary.failed + summary.problems, checked.as_dict())
    lines.append(f"haul demo: {verdict.text}")  # the report's headline, word for word
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return demo_status(summary.complete, verdict)


def demo_status(complete: bool, verdict: Headline) -> int:
    """As every command's: 3 when records failed or verify found differences, 1 when the
    target does not hold what was staged, 0 when it does and matches."""
    if not verdict.ok:
        return 3
    return 0 if complete else 1
