"""One part of a shard manifest, run like a whole run: `run_part(manifest_path, part)`.

The entry point of `haul run --manifest FILE --part P` and of the orchestrators' tasks. Each
part derives its config from the manifest's base config (its scope, its store, its tokens)
and runs the ordinary runner over it, so it is exactly once and resumable like any run; a
`Portion` says what share of the whole run it does:

- ``first`` stages the organisation (and the planning layer, whose records it holds for the
  last part) and loads the organisation objects: it lists no trees, and says so in its store
  (`Portion.skip_reason`), so its plans make the organisation of every queue in scope, not of
  the queues its (absent) issues are in: the shards find it all, even in an empty org.
- a shard stages and loads its trees and the links inside it; a link to a record it does not
  plan (another shard's issue), the planning layer's links and the autoactions, triggers and
  macros wait (held) for the last part: two shards running at once never both make a link.
- ``last`` gathers every other part's store into its own (`haul.state.union`), wakes every
  waiting row (a link whose other end another shard loaded now finds it in the union's
  ledger) and loads: the links across shards, the planning layer, the autoactions last.
  Once per gather (`TEXTS_TO_SHOW_AGAIN`), every loaded text that shows a file another part
  staged (`PartsHolding`: a comment of one shard linking to a file of another) is refreshed:
  written again with that file known.

A part refuses to start (exit 1) before the parts it `needs` have finished; a part that
ended (exit 0 or 3: done, maybe with failed records) says so in its own store
(`shards.finished`), and starting it again takes that back until it ends again.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog
from rich.console import Console

from haul.connectors.errors import HaulError
from haul.pipelines.commands.run import (
    PLANNED_AT,
    Interrupted,
    Portion,
    RunSummary,
    load,
    open_store,
    recorded_run,
    run_all,
)
from haul.pipelines.config import Config, Scope, Staging, load_config
from haul.pipelines.logs import configure_logging
from haul.pipelines.progress import Progress
from haul.pipelines.report.counts import print_run
from haul.pipelines.services import Service
from haul.pipelines.shards.manifest import (
    FIRST,
    LAST,
    Manifest,
    Part,
    check_pinned,
    read_manifest,
)
from haul.pipelines.specs import Phase
from haul.state.union import PartsHolding, gather, gather_blobs, plan_waiting_again

log = structlog.get_logger(__name__)

FINISHED = "shards.finished"  # in a part's store: {"part", "exit"} once it ended
GATHERED = "shards.gathered."  # in the last part's store, per part: the finish it gathered
# in the last part's store: {"pending": true} once a part was gathered whose texts may show
# files another part loaded; the last part's load then writes those texts again
TEXTS_TO_SHOW_AGAIN = "shards.texts_to_show_again"
TREE_LISTINGS = frozenset({"issue"})  # the staged entities of the listings the first part skips
LISTED_BY_SHARDS = "listed by the shards of the manifest (this part makes their organisation)"
HELD_FOR_LAST = "waits for the last part of the shard manifest (haul run --part last)"


class PartNotReady(HaulError):
    """A part the one asked for needs has not finished: run it first (exit 1)."""

    exit_code = 1


def part_config(manifest: Manifest, part: Part, base: Config) -> Config:
    """The base config narrowed to `part`: its scope, its store, its token variables."""
    update: dict[str, Any] = {"staging": Staging(path=manifest.store_path(part))}
    if part.source_token_env:
        update["source"] = base.source.model_copy(update={"token_env": part.source_token_env})
    if part.target_token_env and base.target is not None:
        update["target"] = base.target.model_copy(update={"token_env": part.target_token_env})
    if part.name == FIRST:
        update["scope"] = base.scope.model_copy(update={"wiki_roots": (), "surveys": ()})
        update["backfill"] = ()
    elif part.is_shard and part.scope is not None:
        update.update(_shard_scope(base, part))
    config = base.model_copy(update=update)
    config._folder = base.folder
    return config


def _shard_scope(base: Config, part: Part) -> dict[str, Any]:
    narrowed = part.scope
    assert narrowed is not None
    query = " AND ".join(q for q in (base.scope.query, narrowed.query) if q) or None
    scope = Scope.model_construct(
        **{
            **dict(base.scope),
            "queues": narrowed.queues,
            "query": query,
            "wiki_roots": narrowed.wiki_roots,
            "surveys": narrowed.surveys,
            "entities": (),
            "filters": "none",
            "dashboards": "none",
        }
    )
    roots = set(narrowed.wiki_roots)
    mapping = base.mapping.model_copy(
        update={"wiki_roots": {k: v for k, v in base.mapping.wiki_roots.items() if k in roots}}
    )
    surveys = set(narrowed.surveys)
    backfill = tuple(rule for rule in base.backfill if rule.survey in surveys)
    return {"scope": scope, "mapping": mapping, "backfill": backfill}


def portion(part: Part) -> Portion:
    """What share of a whole run `part` does (see the module docstring)."""
    if part.name == FIRST:
        return Portion(
            skip_streams=TREE_LISTINGS,
            skip_reason=LISTED_BY_SHARDS,
            held_from=Phase.TREES,
            held_reason=HELD_FOR_LAST,
        )
    if part.is_shard:
        return Portion(
            held_from=Phase.PLANNING_LINKS, held_reason=HELD_FOR_LAST, hold_unplanned=True
        )
    return Portion()


def finished(manifest: Manifest, part: Part) -> dict[str, Any] | None:
    """How `part` last ended (`{"part", "exit", "run"}`), or None while it has not."""
    path = manifest.store_path(part)
    if not path.exists():
        return None
    with open_store(path) as store:
        return store.get_checkpoint(FINISHED)


def require_ready(manifest: Manifest, part: Part) -> None:
    """PartNotReady naming the first part `part` needs that has not finished."""
    for name in part.needs:
        if finished(manifest, manifest.part(name)) is None:
            raise PartNotReady(
                f"part {part.name} needs part {name}, which has not finished: run "
                f"haul run --manifest <this manifest> --part {name} to its end first "
                "(haul status --manifest shows every part)"
            )


async def run_part_async(
    manifest: Manifest,
    name: str,
    services: Sequence[Service],
    *,
    progress: Progress | None = None,
    environ: Mapping[str, str] = os.environ,
    stop_requested: Callable[[], bool] = lambda: False,
) -> RunSummary:
    """Run one part of `manifest` to its end (the summary of its run); raises what a run
    raises, and PartNotReady before any work when a part it needs has not finished."""
    part = manifest.part(name)
    base = load_config(manifest.config_path)
    check_pinned(manifest, base)  # one migration never split across two orgs
    require_ready(manifest, part)
    config = part_config(manifest, part, base)
    _mark(config, None)
    if part.name == LAST:
        _gather_parts(manifest, config)
        return await load(
            config,
            services,
            progress=progress,
            environ=environ,
            stop_requested=stop_requested,
            portion=Portion(
                resend_shown_mark=TEXTS_TO_SHOW_AGAIN,
                shown_apart=lambda union: PartsHolding(union).apart,
            ),
        )
    return await run_all(
        config,
        services,
        progress=progress,
        environ=environ,
        stop_requested=stop_requested,
        portion=portion(part),
    )


def _mark(config: Config, value: dict[str, Any] | None) -> None:
    """Say in the part's store that it ended (`value`), or that it runs again (None)."""
    config.staging_path.parent.mkdir(parents=True, exist_ok=True)
    with open_store(config.staging_path) as store:
        if value is None:
            with store.transaction():
                store.db.execute("DELETE FROM checkpoints WHERE name = ?", [FINISHED])
        else:
            store.set_checkpoint(FINISHED, value)


def _gather_parts(manifest: Manifest, config: Config) -> None:
    """Copy each other part's store (its records and ledger, its files linked or copied)
    into the last part's, once per time that part ended, then plan every waiting row again:
    each was planned by a part that saw only its share (a link between two shards was
    planned on both sides; the union plans one), and the union may hold what each waited for."""
    with open_store(config.staging_path) as union, recorded_run(union, "gather"):
        for part in manifest.parts:
            if part.name == LAST:
                continue
            ended = finished(manifest, part)
            if ended is None or union.get_checkpoint(GATHERED + part.name) == ended:
                continue
            # set first: a gather killed half way still leaves its texts to be shown again
            union.set_checkpoint(TEXTS_TO_SHOW_AGAIN, {"pending": True})
            files = gather_blobs(union, manifest.store_path(part))
            copied = gather(
                union, manifest.store_path(part), GATHERED + part.name, ended, name=part.name
            )
            log.info("part_gathered", part=part.name, **copied, files=files)
        log.info("waiting_planned_again", rows=plan_waiting_again(union, PLANNED_AT))


def exit_status(summary: RunSummary) -> int:
    """The exit status of a part that ran to its end: 3 with failed records, 1 when the
    target does not hold what was staged, else 0 (as `haul run`)."""
    if summary.failed + summary.problems:
        return 3
    if not summary.complete:
        return 1
    return 0


def run_part(
    manifest_path: str | Path,
    part: str,
    services: Sequence[Service],
    *,
    environ: Mapping[str, str] = os.environ,
    console: Console | None = None,
) -> int:
    """Run one part of the manifest at `manifest_path` and return its exit status (0 done,
    1 stopped or not ready, 2 a usage or config error, 3 done with failed records, 4 rate
    limited); what went wrong is the last line on stderr. The orchestrators call this."""
    try:
        manifest = read_manifest(Path(manifest_path))
        config = part_config(manifest, manifest.part(part), load_config(manifest.config_path))
        configure_logging(config.log_path, verbose=False)
        summary = asyncio.run(_supervised(manifest, part, services, environ))
    except Interrupted as exc:
        return _said(1, str(exc))
    except HaulError as exc:
        return _said(exc.exit_code, str(exc))
    code = exit_status(summary)
    if code in (0, 3):
        _mark(config, {"part": part, "exit": code, "run": _last_run(config)})
    print_run(
        summary.counts,
        summary.details,
        summary.unmapped_users,
        console or Console(),
        f"haul run --part {part}",
    )
    if code:
        _said(code, f"part {part} ended with exit status {code}: see haul status --manifest")
    return code


async def _supervised(
    manifest: Manifest, part: str, services: Sequence[Service], environ: Mapping[str, str]
) -> RunSummary:
    from haul.pipelines.stopping import GracefulStop

    stop = GracefulStop()
    in_main = _in_main_thread()
    if in_main:
        stop.install()
    try:
        return await run_part_async(
            manifest, part, services, environ=environ, stop_requested=stop.requested
        )
    finally:
        if in_main:
            stop.uninstall()


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _last_run(config: Config) -> int | None:
    with open_store(config.staging_path) as store:
        runs = store.recent_runs(1)
    return int(runs[0]["id"]) if runs else None


def _said(code: int, message: str) -> int:
    print(f"haul: {message}", file=sys.stderr)
    return code
