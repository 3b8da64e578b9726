"""Benchmark: requests per issue, and the time of a migration under a real rate limit.

Against the real service the rate limit sets the pace of a run (its time is requests / limit),
so the figures here are requests, counted by the sandbox (its `/_sandbox/stats`), and one time
under a limit the sandbox enforces:

(a) `requests`: on the small org (no latency; requests do not depend on it):
    - a migration's extract with the default config, attachment downloads left out, and the
      same extract with the changelog staged (`[scope] changelog = true`) into a fresh store;
    - a nightly run: then 1% of the issues change at the source through
      the plain API (a summary edited, a tag added, a comment added, edited, deleted, in
      turn), then `haul extract` runs again on each store. Its figure is the extract's
      requests, less the issue searches, per changed issue; the searches (scrolls, counts,
      dictionaries) are printed beside it. The load that would follow writes what changed;
      it is the target's figure, not the source's reads, and is left out.
    The plain store is then loaded and verified (`haul load`, `haul verify`), and the links,
    remote links and worklogs of every issue are counted through the plain API at the source
    and in the target: the shortcuts must not leave one fewer in the target.
(b) `limit`: the small org's migration (`haul run`) against `ratelimit:40` (40 requests per
    second per org per service, 429 with Retry-After) with the default config, beside the
    same migration by a sequential client: the same requests one at a time
    (`[tuning] concurrency = 1`), each on a fresh sandbox with 20 ms of latency.

Each figure is recorded for `make bench`'s table (bench/results.py).

    .venv/bin/python bench/request_counts.py [--size small] [--part requests|limit ...]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from harness import TOKEN_ENV, haul_command, sandbox
from results import record
from tracker import is_download, sandbox_requests

from haul.connectors.tracker import TrackerClient
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.state.store import StagingStore

LIMIT = 40
CHANGED_SHARE = 0.01
PARTS = ("requests", "limit")
# what a nightly run asks once per queue or org, whatever changed
SEARCHES = ("/issues/_search", "/issues/_count", "/search/scroll", "/queues", "/users",
            "/statuses", "/issuetypes", "/priorities", "/resolutions", "/linktypes", "/fields",
            "/applications", "/myself", "/boards", "/components", "/versions", "/categories")  # fmt: skip


def write_config(directory: Path, info: dict[str, Any], *, changelog: bool = False,
                 sequential: bool = False) -> Path:  # fmt: skip
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        queue_mapping={},
        sections="[tuning]\nconcurrency = 1\n" if sequential else "",
        scope_extra={"changelog": True} if changelog else {},
    )
    return write_sandbox_config(directory, info, options)


def api_requests(by_route: Counter[str]) -> int:
    return sum(n for route, n in by_route.items() if not is_download(route))


def searches(by_route: Counter[str]) -> int:
    return sum(n for route, n in by_route.items() if not _per_issue(route))


def _tracker(route: str) -> bool:
    """A tracker API request (the run's wiki and forms requests have limits of their own)."""
    return route.split(" ", 1)[1].startswith(("/v3/", "/v2/"))


def _per_issue(route: str) -> bool:
    """A request about one issue (`/issues/{key}/...` or the issue itself)."""
    path = route.split(" ", 1)[1]
    return path.startswith("/v3/issues/{") or path.startswith("/v2/issues/{")


def counted(command: str, config: Path, info: dict[str, Any]) -> Counter[str]:
    before = sandbox_requests(info)
    haul_command(command, config, info)
    return sandbox_requests(info) - before


def staged_issues(config: Path) -> list[dict[str, Any]]:
    with StagingStore.open(config.parent / "haul.db") as store:
        return [record.raw for record in store.iter_records("issue")]


async def plain_counts(info: dict[str, Any], org: str) -> Counter[str]:
    """The links, remote links and worklogs of every issue of `org`, through the plain API
    (one listing of each per issue, a few issues at a time)."""
    totals: Counter[str] = Counter()
    async with TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"][org]
    ) as client:

        async def count(key: str) -> None:
            links = await client.list_links(key)
            remote_links = await client.list_remote_links(key)
            worklogs = [w async for w in client.iter_worklogs(key)]
            # added after the awaits: `totals[k] += await ...` reads totals[k] before awaiting
            totals.update(links=len(links), remote_links=len(remote_links), worklogs=len(worklogs))

        queues = [str(queue["key"]) async for queue in client.iter_queues()]
        for queue in queues:
            async for page in client.scroll_issues(filter={"queue": queue}, per_scroll=1000):
                keys = [str(issue["key"]) for issue in page]
                for start in range(0, len(keys), 16):
                    await asyncio.gather(*(count(key) for key in keys[start : start + 16]))
                totals["issues"] += len(keys)
    return totals


def report_carried(size: str, carried: dict[str, Counter[str]]) -> None:
    """Fewer in the target than at the source, per kind (the target must lose none)."""
    for kind in ("links", "remote links", "worklogs"):
        field = kind.replace(" ", "_")
        source, target = carried["source"][field], carried["target"][field]
        print(f"{kind} through the plain API: source {source}, target {target}")
        record(f"tracker migration: {kind} fewer in the target than at the source",
               max(0, source - target), "<= 0", unit="",
               note=f"{size} org: source {source}, target {target}")  # fmt: skip


async def people_change(info: dict[str, Any], issues: list[dict[str, Any]]) -> int:
    """1% of the issues changed through the plain API, one kind of change after another;
    returns how many issues changed."""
    chosen = sorted(issues, key=lambda issue: str(issue["key"]))
    step = max(1, round(1 / CHANGED_SHARE))
    picked = chosen[::step]
    async with TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"]["source"]
    ) as source:
        for n, issue in enumerate(picked):
            await _change(source, str(issue["key"]), n % 5)
    return len(picked)


async def _change(source: TrackerClient, key: str, kind: int) -> None:
    """One of: a summary edited, a tag added, a comment added, edited, deleted (an issue
    without comments has its summary edited instead)."""
    comments = [c async for c in source.iter_comments(key)] if kind >= 3 else []
    if kind == 0 or (kind >= 3 and not comments):
        await source.update_issue(key, {"summary": f"{key} said again"})
    elif kind == 1:
        await source.update_issue(key, {"tags": {"add": ["nightly"]}})
    elif kind == 2:
        await source.core.request("POST", f"/issues/{key}/comments", json={"text": "nightly"})
    elif kind == 3:
        await source.update_comment(key, comments[0]["id"], {"text": "edited overnight"})
    else:
        await source.delete_record(key, "comments", comments[-1]["id"])


def requests_part(size: str) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"haul-bench-requests-{size}-"))
    try:
        with sandbox(size, 0.0) as info:
            plain = write_config(workdir / "plain", info)
            full = write_config(workdir / "full", info, changelog=True)
            first = {name: counted("extract", config, info) for name, config in
                     (("plain", plain), ("full", full))}  # fmt: skip
            issues = staged_issues(plain)
            haul_command("load", plain, info)
            haul_command("verify", plain, info)
            carried = {org: asyncio.run(plain_counts(info, org)) for org in ("source", "target")}
            changed = asyncio.run(people_change(info, issues))
            nightly = {name: counted("extract", config, info) for name, config in
                       (("plain", plain), ("full", full))}  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report_requests(size, len(issues), first, changed, nightly)
    report_carried(size, carried)


def report_requests(size: str, issues: int, first: dict[str, Counter[str]], changed: int,
                    nightly: dict[str, Counter[str]]) -> None:  # fmt: skip
    note = f"{size} org, {issues} issues"
    targets = {"plain": ("a migration's default config, no downloads", "<= 2.2"),
               "full": ("changelog staged", "<= 3.2")}  # fmt: skip
    for name, (label, target) in targets.items():
        per_issue = api_requests(first[name]) / max(1, issues)
        print(f"migration extract, {label}: {per_issue:.2f} requests per issue")
        for route, count in first[name].most_common(12):
            print(f"  {route:<56}{count / max(1, issues):>7.2f}")
        record(f"tracker requests per issue, migration ({label})", per_issue, target,
               unit="", note=note)  # fmt: skip
    for name, label in (("plain", "default config"), ("full", "changelog staged")):
        by_route = nightly[name]
        asked = searches(by_route)
        per_changed = (api_requests(by_route) - asked) / max(1, changed)
        print(f"nightly extract, {label}: {changed} issues changed, {per_changed:.2f} requests "
              f"per changed issue plus {asked} searches")  # fmt: skip
        for route, count in by_route.most_common():
            print(f"  {route:<56}{count:>7}")
        record(f"tracker nightly (1% changed, {label}): requests per changed issue",
               per_changed, "<= 1.5" if name == "plain" else "", unit="",
               note=f"{note}, {changed} changed, plus {asked} searches")  # fmt: skip


def limit_part(size: str) -> None:
    seconds = {}
    for name, sequential in (("haul", False), ("sequential", True)):
        workdir = Path(tempfile.mkdtemp(prefix=f"haul-bench-limit-{name}-"))
        try:
            with sandbox(size, 20.0, f"ratelimit:{LIMIT}") as info:
                config = write_config(workdir, info, sequential=sequential)
                before = sandbox_requests(info)
                seconds[name] = haul_command("run", config, info).seconds
                served = sandbox_requests(info) - before  # refused ones too
                sent = sum(n for route, n in served.items() if _tracker(route))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        print(f"migration under {LIMIT} requests/s, {name}: {seconds[name]:.1f} s, {sent} tracker"
              f" requests sent (refused ones too): {sent / seconds[name] / LIMIT:.0%} of the"
              " limit")  # fmt: skip
    note = f"{size} org, ratelimit:{LIMIT}, 20 ms"
    record(f"tracker migration under {LIMIT} req/s: haul", seconds["haul"], unit="s", note=note)
    record(f"tracker migration under {LIMIT} req/s: sequential client", seconds["sequential"],
           unit="s", note=note)  # fmt: skip
    record(f"tracker migration under {LIMIT} req/s: sequential / haul",
           seconds["sequential"] / seconds["haul"], note=note)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--part", action="append", choices=PARTS, help="repeatable; default all")
    args = parser.parse_args()
    parts = args.part or list(PARTS)
    if "requests" in parts:
        requests_part(args.size)
    if "limit" in parts:
        limit_part(args.size)


if __name__ == "__main__":
    main()
