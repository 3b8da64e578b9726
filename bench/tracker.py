"""Benchmark: extract and load throughput against a sandbox with injected latency.

Prints, for the pipeline (the default config: both rate budgets "auto", the default
concurrency and page sizes) and for a baseline that does the same work one request at a time
(`[tuning] concurrency = 1`): records per second, requests per issue (attachment downloads
left out, as the issue's target counts them), client CPU milliseconds per request and peak
memory of each `haul` process; then the extract's requests per issue by endpoint. Unless
`--quick`, two more runs on the same sandbox: an extract with `[scope] changelog = true`
into a fresh store (what a config with an `[export]` section stages; the default config is a
migration's, so "auto" leaves the changelog out), and the same extraction, changelog
included, written with the tracker's official SDK (`yandex_tracker_client`), one request at
a time: the comparison the 20x target is stated against, made with the extract that asks
for the same records.
The sandbox runs in its own process (`haul sandbox serve`), so it does not share the
pipeline's interpreter. The baselines take several minutes on the small org;
`--baseline-size tiny` is quicker but counts process start-up against it.

CPU per request depends on the disk's state as well as on haul: each attachment is a file, and
on ext4, right after many files were deleted (earlier benchmark runs' temp folders), creating
one costs several times more system time (perf shows the inode allocator in
`recently_deleted`). The same commit measured 0.7 and 1.1 ms per request that way; compare
commits with runs interleaved in one series, not with figures from another hour.

    .venv/bin/python bench/tracker.py [--size small] [--baseline-size tiny] [--latency-ms 20] [--quick]
"""

from __future__ import annotations

import argparse
import compileall
import resource
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from harness import TOKEN_ENV, haul_command, sandbox
from results import record

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.state.store import StagingStore


@dataclass
class Phase:
    name: str
    records: int
    seconds: float
    by_route: Counter[str]
    issues: int
    peak_mb: float
    cpu_s: float  # the haul process's own user + system CPU

    @property
    def requests(self) -> int:
        return sum(self.by_route.values())

    @property
    def api_requests(self) -> int:
        """Requests but attachment downloads."""
        return sum(n for route, n in self.by_route.items() if not is_download(route))

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu_s / self.requests if self.requests else 0.0

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def sandbox_requests(info: dict[str, Any]) -> Counter[str]:
    """Requests served so far, by ``"METHOD /route"``."""
    base = info["tracker"].rsplit("/v3", 1)[0]
    reply = httpx.get(
        f"{base}/_sandbox/stats", headers={"Authorization": f"OAuth {info['tokens']['admin']}"}
    )
    reply.raise_for_status()
    return Counter(reply.json()["by_route"])


def is_download(route: str) -> bool:
    return route.startswith("GET ") and route.endswith("/{attachment_id}/{filename}")


def write_config(
    directory: Path, info: dict[str, Any], concurrency: int | None, *, changelog: bool = False
) -> Path:
    """The pipeline's config for this sandbox: every source queue, the default budgets
    ("auto"), page sizes and changelog ("auto": none, in a migration's config), and the
    default concurrency unless one is given; `changelog` stages it as an export's would."""
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        queue_mapping={},
        endpoint_extra={},
        sections="" if concurrency is None else f"[tuning]\nconcurrency = {concurrency}\n",
        scope_extra={"changelog": True} if changelog else {},
    )
    return write_sandbox_config(directory, info, options)


def run_phase(name: str, config: Path, info: dict[str, Any], *, label: str = "") -> Phase:
    before = sandbox_requests(info)
    ran = haul_command(name, config, info)
    with StagingStore.open(config.parent / "haul.db") as store:
        counts = store.count_records()
        done = sum(s.get("done", 0) for s in store.ledger.counts().values())
    staged = sum(
        n for entity, n in counts.items() if "." not in entity and entity not in DICTIONARY_ENTITIES
    )
    return Phase(
        name=label or name,
        records=staged if name == "extract" else done,
        seconds=ran.seconds,
        by_route=sandbox_requests(info) - before,
        issues=counts.get("issue", 0),
        peak_mb=ran.peak_mb,
        cpu_s=ran.cpu_s,
    )


DICTIONARY_ENTITIES = {"status", "issuetype", "priority", "resolution", "linktype", "queue", "user"}


def sdk_extract(info: dict[str, Any], workdir: Path) -> Phase:
    """The same extraction written with the tracker's official SDK, one request at a time:
    every issue by scroll, then its comments, worklogs, changelog, links, remote links (the
    SDK has no collection for them: its connection's plain GET), attachments (each
    downloaded) and checklist, as a plain script would ask for them."""
    import yandex_tracker_client as sdk  # a dev dependency

    client = sdk.TrackerClient(
        token=info["tokens"]["admin"],
        org_id=info["orgs"]["source"],
        base_url=info["tracker"].rsplit("/v3", 1)[0],
        retries=1,
    )
    files = workdir / "sdk-files"
    files.mkdir()
    before = sandbox_requests(info)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    issues = records = 0
    for issue in client.issues.find(filter={}, scrollType="unsorted", perScroll=1000):
        issues += 1
        records += 1
        for listing in (issue.comments, issue.worklog, issue.changelog, issue.links):
            records += sum(1 for _ in listing.get_all())
        records += len(client._connection.get(path=f"/v2/issues/{issue.key}/remotelinks"))
        for attachment in issue.attachments.get_all():
            records += 1
            attachment.download_to(str(files))
        records += any(True for _ in issue.checklist_items.get_all())
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return Phase(
        name="extract (official SDK)",
        records=records,
        seconds=seconds,
        by_route=sandbox_requests(info) - before,
        issues=issues,
        peak_mb=after.ru_maxrss / 1024,
        cpu_s=(after.ru_utime + after.ru_stime) - (usage.ru_utime + usage.ru_stime),
    )


def measure(
    size: str, latency_ms: float, concurrency: int | None, *, extras: bool = False
) -> list[Phase]:
    """Extract and load; with `extras`, then an extract with the changelog into a fresh
    store and the official SDK's extraction, on the same sandbox."""
    workdir = Path(tempfile.mkdtemp(prefix=f"haul-bench-{size}-"))
    try:
        with sandbox(size, latency_ms) as info:
            config = write_config(workdir, info, concurrency)
            phases = [run_phase("extract", config, info), run_phase("load", config, info)]
            if extras:
                full = write_config(workdir / "full", info, concurrency, changelog=True)
                phases.append(run_phase("extract", full, info, label="extract, changelog"))
                phases.append(sdk_extract(info, workdir))
            return phases
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def compile_haul() -> None:
    """Byte-compile haul's own modules, as installing the package does (pip compiles what it
    installs; an editable install under PYTHONDONTWRITEBYTECODE never does, and each `haul`
    process then compiles its modules again: a tenth of a second of CPU on every run)."""
    root = Path(__file__).resolve().parent.parent
    for package in ("connectors", "state", "pipelines", "sandbox"):
        compileall.compile_dir(root / package, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="small")
    parser.add_argument(
        "--baseline-size", default="small", help="tiny gives a quicker, rougher baseline"
    )
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument(
        "--concurrency", type=int, default=None, help="the pipeline's (default: the config's)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="leave out the extract with the changelog and the official SDK's (minutes)",
    )
    args = parser.parse_args()

    compile_haul()
    pipeline = measure(args.size, args.latency_ms, args.concurrency, extras=not args.quick)
    extras = pipeline[2:]
    pipeline = pipeline[:2]
    baseline = measure(args.baseline_size, args.latency_ms, 1)
    print(
        f"\nsandbox latency {args.latency_ms:g} ms; pipeline: {args.size} org, concurrency {args.concurrency or 'default'}; "
        f"baseline: {args.baseline_size} org, one request at a time"
    )
    print(
        f"{'run':<32}{'records':>9}{'seconds':>9}{'rec/s':>9}{'requests':>10}{'req/issue':>10}{'peak MB':>9}"
        f"{'CPU ms/req':>11}"
    )
    for label, phases in (
        ("pipeline", pipeline + extras[:1]),
        ("baseline", baseline),
        ("", extras[1:]),
    ):
        for phase in phases:
            print(
                f"{(label + ' ' + phase.name).strip():<32}{phase.records:>9}{phase.seconds:>9.1f}{phase.rate:>9.0f}"
                f"{phase.requests:>10}{phase.api_requests / max(1, phase.issues):>10.2f}{phase.peak_mb:>9.0f}"
                f"{phase.cpu_ms_per_request:>11.2f}"
            )
    extract = pipeline[0]
    print(f"\nextract requests per issue by endpoint ({extract.issues} issues)")
    for route, count in extract.by_route.most_common():
        note = "  (download, not counted)" if is_download(route) else ""
        print(f"  {route:<52}{count / max(1, extract.issues):>7.2f}{note}")
    orgs = f"{args.size} org against {args.baseline_size}, {args.latency_ms:g} ms"
    targets = {"extract": "", "load": ">= 15"}  # the extract's target is against the SDK's
    for fast, slow in zip(pipeline, baseline, strict=True):
        print(
            f"speed-up {fast.name} over haul one request at a time: {fast.rate / slow.rate:.1f}x"
            if slow.rate
            else f"{fast.name}: no baseline rate"
        )
        if slow.rate:
            record(f"tracker {fast.name} / one request at a time", fast.rate / slow.rate,
                   targets[fast.name], note=orgs)  # fmt: skip
    # the requests per issue are bench/request_counts.py's figures (counted without latency)
    if extras:  # same org, same run, same records (changelog included): the extraction's time
        full, sdk_phase = extras
        print(
            f"speed-up extract (changelog included) over the official SDK one request at a time: "
            f"{sdk_phase.seconds / full.seconds:.1f}x "
            f"({sdk_phase.seconds:.0f} s against {full.seconds:.1f} s)"
        )
        record("tracker extract (changelog) / official SDK", sdk_phase.seconds / full.seconds,
               ">= 30", note=f"{args.size} org, {args.latency_ms:g} ms, same records")  # fmt: skip


if __name__ == "__main__":
    main()
