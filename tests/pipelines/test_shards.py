"""Sharded runs: a migration cut by `haul plan --shards N` into first, N shards and last, each
run as its own `haul run --manifest F --part P` process, ends as a one-process migration of a
twin sandbox does, record for record (compared through the plain API)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.crash_runs import HAUL, finish
from tests.helpers.haul_fixtures import TOKEN_ENV, client_for, source_queues, write_config
from tests.helpers.org_snapshot import org_structure
from tests.helpers.shard_runs import (
    haul_manifest,
    into_empty_org,
    plan,
    run_ok,
    source_references_left,
)
from tests.helpers.twin_snapshots import MAPPING, snapshot_source, snapshot_target

ADMIN = "robot"  # the sandbox's migrating admin


def source_structure(info: dict[str, Any], queues: list[str]) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with client_for(info, "source") as source:
            return await org_structure(source, queues)

    return asyncio.run(read())


def load_moved(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot with the `updatedAt` of every issue the load itself last edited (a remote
    link takes no time of its own: the target records the load's moment) said as such: two
    loads at two moments can only agree that it moved."""
    moved = {}
    for key, issue in snapshot.items():
        if isinstance(issue, dict) and issue.get("updatedBy") == ADMIN:
            issue = {**issue, "updatedAt": "moved by the load"}
        moved[key] = issue
    return moved


def one_process(tmp_path: Path, start: Any, size: str = "tiny") -> dict[str, Any]:
    with start(size=size, seed=11) as sandbox:
        info = sandbox.info
        queues = source_queues(info)
        config = write_config(tmp_path / "whole", info, queues=queues, mapping={})
        finish(
            into_empty_org(config, info), "run", {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        )
        return load_moved(snapshot_target(info, queues, org="empty", mapping={}))


def test_the_plan_is_deterministic_and_parts_wait_for_what_they_need(tmp_path: Path) -> None:
    """Planned twice from the same counts, the manifest is the same bytes (a large queue cut
    into creation windows); a shard or the last part run before the first refuses with exit 1
    naming the part to run, an unknown part is a usage error, and status shows none started."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as sandbox:
        info = sandbox.info
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        config = write_config(tmp_path, info, queues=source_queues(info), mapping=MAPPING)
        manifest = tmp_path / "manifest.json"
        plan(config, manifest, 4, env)
        written = manifest.read_bytes()
        plan(config, manifest, 4, env)
        assert manifest.read_bytes() == written
        shards = json.loads(written)["parts"][1:-1]
        assert any(part["scope"]["query"] for part in shards)  # a window of the large queue
        for part in ("1", "last"):
            early = haul_manifest(manifest, "run", "--part", part, env=env)
            assert early.returncode == 1, early.stderr
            assert "needs part first" in early.stderr
        unknown = haul_manifest(manifest, "run", "--part", "9", env=env)
        assert unknown.returncode == 2
        assert "no such part" in unknown.stderr
        status = json.loads(run_ok(manifest, "status", "--json", env=env))
    assert {row["state"] for row in status["parts"]} == {"not started"}


@pytest.mark.slow  # two sandboxes, six parts and a whole run: over a minute (small: minutes)
@pytest.mark.timeout(1800)  # the small org: over 5 minutes on a loaded machine
@pytest.mark.parametrize("size", ["tiny", "small"])
def test_four_shards_equal_one_process(tmp_path: Path, size: str) -> None:
    """plan --shards 4 into the empty org, then first, every shard (one SIGKILLed mid-load and
    run again), last: the target equals a one-process migration's into a twin sandbox's empty
    org, text by text, verify over the manifest exits 0 with no reference to the source left,
    and status names every part done. On the small org too, as the issue's done-when asks."""
    from haul.sandbox import server as sandbox_server

    (tmp_path / "whole").mkdir()
    (tmp_path / "sharded").mkdir()
    expected = one_process(tmp_path, sandbox_server.start_sandbox, size)
    with sandbox_server.start_sandbox(size=size, seed=11) as sandbox:
        info = sandbox.info
        queues = source_queues(info)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        config = write_config(tmp_path / "sharded", info, queues=queues, mapping={})
        manifest = tmp_path / "sharded" / "manifest.json"
        plan(into_empty_org(config, info), manifest, 4, env)
        parts = [part["part"] for part in json.loads(manifest.read_text())["parts"]]
        assert parts[0] == "first" and parts[-1] == "last" and len(parts) == 6
        for part in parts:
            if part == "2":
                assert kill_part_after(manifest, part, env, loaded=20)
            run_ok(manifest, "run", "--part", part, env=env)
        actual = load_moved(snapshot_target(info, queues, org="empty", mapping={}))
        assert source_references_left(run_ok(manifest, "verify", env=env)) == 0
        status = json.loads(run_ok(manifest, "status", "--json", env=env))
    assert [row["state"] for row in status["parts"]] == ["done"] * 6
    assert sorted(actual) == sorted(expected)
    for key in expected:
        assert actual[key] == expected[key], key


def done_rows(db: Path) -> int:
    """Records loaded so far in a part's store, read beside the running process."""
    if not db.exists():
        return 0
    from haul.state.store import StagingStore

    with StagingStore.open(db) as store:
        return sum(states.get("done", 0) for states in store.ledger.counts().values())


def kill_part_after(manifest: Path, part: str, env: dict[str, str], loaded: int) -> bool:
    """Start `haul run --part`, SIGKILL it once its store holds `loaded` more done rows;
    True if it was killed before it ended."""
    db = manifest.parent / "stores" / part / "haul.db"
    threshold = done_rows(db) + loaded
    process = subprocess.Popen(
        [HAUL, "run", "--part", part, "--manifest", str(manifest)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if done_rows(db) >= threshold:
            process.send_signal(signal.SIGKILL)
            process.communicate()
            return True
        time.sleep(0.005)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr.decode()
    return False


def run_at_once(manifest: Path, parts: tuple[str, ...], env: dict[str, str]) -> None:
    """Run `parts` as processes at the same time, each to exit 0."""
    command = [HAUL, "run", "--manifest", str(manifest), "--part"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    running = [subprocess.Popen([*command, part], env=env, **pipes) for part in parts]
    for process in running:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, (stdout + stderr).decode()


def assert_export_has_every_file(manifest: Path, env: dict[str, str]) -> None:
    """`haul export --manifest` lists every attachment of every shard, and the bytes each
    names are in the union's blob folder, whole (the shards downloaded them)."""
    import csv

    from haul.state import BlobStore

    out = manifest.parent / "exports"
    run_ok(manifest, "export", "--entities", "attachments", "--out", str(out), env=env)
    (folder,) = [path for path in out.iterdir() if path.is_dir() and not path.is_symlink()]
    with (folder / "attachments.csv").open(newline="") as exported:
        named = [row["sha256"] for row in csv.DictReader(exported)]
    assert named and all(named)
    blobs = BlobStore(manifest.parent / "stores" / "last" / "haul.db.blobs")
    assert [sha256 for sha256 in named if not blobs.intact(sha256)] == []


@dataclass(frozen=True)
class Sharded:
    """A sharded migration of the tiny org into the sandbox's empty org, done."""

    info: dict[str, Any]
    queues: list[str]
    manifest: Path
    env: dict[str, str]
    shown: tuple[str, str]  # (issue, file): a comment on the issue shows a file of another shard


def show_a_file_across_shards(info: dict[str, Any], manifest: Path) -> tuple[str, str]:
    """Comment at the source on an issue of shard 1 with a link to a file of an issue of
    shard 2 (the source's markup); (the issue's key, the file's source id)."""
    shards = json.loads(manifest.read_text())["parts"][1:-1]
    here, there = (shard["scope"]["queues"][0] for shard in shards)

    async def comment() -> tuple[str, str]:
        async with client_for(info, "source") as source:
            async for page in source.scroll_issues(query=f"Queue: {there}"):
                for issue in page:
                    if files := await source.list_attachments(issue["key"]):
                        link = f"[{files[0]['name']}](/{issue['key']}/attachments/{files[0]['id']})"
                        text = f"The same as {link}"
                        await source.core.post_json(
                            f"/issues/{here}-1/comments", json={"text": text}
                        )
                        return f"{here}-1", str(files[0]["id"])
        raise AssertionError(f"no issue of {there} has a file")

    return asyncio.run(comment())


@pytest.fixture(scope="module")
def into_empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sharded]:
    """plan --shards 2 into the empty org (no queue, field or board there yet); the first
    part, a shard and the last part SIGKILLed mid-load, then run again (the two shards at
    once)."""
    from haul.sandbox import server as sandbox_server

    directory = tmp_path_factory.mktemp("shards-into-empty")
    with sandbox_server.start_sandbox(size="tiny", seed=11) as sandbox:
        info = sandbox.info
        queues = source_queues(info)
        env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
        config = into_empty_org(write_config(directory, info, queues=queues, mapping={}), info)
        manifest = directory / "manifest.json"
        plan(config, manifest, 2, env)
        shown = show_a_file_across_shards(info, manifest)
        assert kill_part_after(manifest, "first", env, loaded=3)
        run_ok(manifest, "run", "--part", "first", env=env)
        assert kill_part_after(manifest, "1", env, loaded=40)
        run_at_once(manifest, ("1", "2"), env)  # as an orchestrator's mapped tasks run
        assert kill_part_after(manifest, "last", env, loaded=5)
        run_ok(manifest, "run", "--part", "last", env=env)
        yield Sharded(info, queues, manifest, env, shown)


def test_killed_parts_rerun_into_an_empty_org_lose_and_duplicate_nothing(
    into_empty: Sharded,
) -> None:
    """Into an org without the queues, the first part makes the organisation every shard
    needs; with parts killed and run again, the target equals the source (each record once,
    the links across the shards made from one side, every text's references rewritten), and
    verify over the manifest exits 0 with no reference to the source left. The default run's
    representative of the sharded migration."""
    info, queues, manifest, env = (into_empty.info, into_empty.queues, into_empty.manifest,
                                   into_empty.env)  # fmt: skip
    assert source_references_left(run_ok(manifest, "verify", env=env)) == 0
    assert "every part" in run_ok(manifest, "report", env=env)
    assert_export_has_every_file(manifest, env)
    status = json.loads(run_ok(manifest, "status", "--json", env=env))
    assert [row["state"] for row in status["parts"]] == ["done"] * 4
    source = snapshot_source(info, queues)
    actual = snapshot_target(info, queues, org="empty", mapping={})
    structure = source_structure(info, queues)
    key, file_id = into_empty.shown
    across = [c for c in actual[key]["comments"] if "The same as" in str(c)]
    assert len(across) == 1 and f"/attachments/{file_id})" not in str(across[0])
    source.pop(key), actual.pop(key)  # the file's link names another issue's id on each side
    assert actual.pop("structure") == structure  # no organisation object made twice
    assert sorted(actual) == sorted(source)
    for key, issue in source.items():
        if actual[key]["updatedBy"] == ADMIN:  # a remote link moved it (see load_moved)
            issue = {**issue, "updatedAt": actual[key]["updatedAt"], "updatedBy": ADMIN}
        assert actual[key] == issue, key


def test_verify_fails_when_the_manifest_lacks_a_shard(into_empty: Sharded) -> None:
    """A manifest with a shard taken out (the last part no longer needing it) fails verify:
    the source, counted whole, holds records no shard of it moves; exit 3, naming them."""
    manifest = json.loads(into_empty.manifest.read_text())
    gone = manifest["parts"][2]
    assert gone["scope"] is not None
    manifest["parts"].remove(gone)
    manifest["parts"][-1]["needs"].remove(gone["part"])
    lacking = into_empty.manifest.with_name("lacking.json")
    lacking.write_text(json.dumps(manifest))
    verified = haul_manifest(lacking, "verify", env=into_empty.env)
    assert verified.returncode == 3, verified.stdout + verified.stderr
    for queue in gone["scope"]["queues"]:
        assert f"shard manifest queue {queue}" in verified.stdout


def wiki_forms_target(info: dict[str, Any]) -> dict[str, Any]:
    """The target's back-filled issues and its wiki subtree, normalised (no ids)."""
    from tests.helpers.forms_backfill import client
    from tests.helpers.wiki_snapshot import wiki_snapshot

    async def read() -> dict[str, Any]:
        async with (
            client(info, "wiki", "target") as wiki,
            client(info, "tracker", "target") as tracker,
        ):
            issues = []
            async for issue in tracker.search_issues(query="Queue: NEW", per_page=100):
                files = await tracker.list_attachments(issue["key"])
                issues.append((issue["unique"], issue["summary"], issue["createdAt"], len(files)))
            roots = {"team/runbooks": "team/runbooks"}
            return {"wiki": await wiki_snapshot(wiki, roots), "issues": sorted(issues)}

    return asyncio.run(read())


@pytest.mark.slow  # a twin sandbox and three shards; the kill test is the default run's
def test_wiki_subtrees_and_surveys_shard_like_queues(tmp_path: Path) -> None:
    """A wiki subtree and two surveys back-filled into the tracker and a wiki grid, as three
    shards: each is a shard of its own, every part exits 0, verify over the manifest exits 0,
    and the target equals a one-process run's of a twin sandbox."""
    from haul.sandbox import server as sandbox_server
    from tests.helpers.forms_backfill import write_config as write_backfill_config

    with (
        sandbox_server.start_sandbox(size="tiny", seed=13) as whole,
        sandbox_server.start_sandbox(size="tiny", seed=13) as sharded,
    ):
        env = {**os.environ, TOKEN_ENV: whole.info["tokens"]["admin"]}
        finish(write_backfill_config(tmp_path / "whole", whole.info), "run", env)
        env = {**os.environ, TOKEN_ENV: sharded.info["tokens"]["admin"]}
        config = write_backfill_config(tmp_path / "sharded", sharded.info)
        manifest = tmp_path / "sharded" / "manifest.json"
        plan(config, manifest, 3, env)
        parts = json.loads(manifest.read_text())["parts"]
        scopes = [part["scope"] for part in parts[1:-1]]
        assert sorted(len(s["wiki_roots"]) + len(s["surveys"]) for s in scopes) == [1, 1, 1]
        for part in parts:
            run_ok(manifest, "run", "--part", part["part"], env=env)
        run_ok(manifest, "verify", env=env)
        assert wiki_forms_target(sharded.info) == wiki_forms_target(whole.info)
