"""Wiki page access end to end on the sandbox, over sockets: after `haul run` the plain user
reads in the target exactly the pages it read in the source and the admin reads them all;
every page's readers by login are the source's; `haul verify` compares access and flags a page
opened wider by hand; a holder that maps to no one leaves its page restricted to its owner and
the migrating admin, named by check, plan and the report; and while the load runs, slowed down,
the plain user never reads a page the source refused it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, load, run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import Config, load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.sandbox.people import ADMIN_LOGIN
from haul.state.store import StagingStore
from tests.helpers.crash_runs import finish, haul
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, mapping_files, writes, written_since
from tests.helpers.wiki_fixtures import roles, wiki

MOVED = {"team/handbook": "archive/handbook"}  # a root lands elsewhere: it takes its access along


def write(directory: Path, info: dict[str, Any], **mapping: str) -> Config:
    mapping = mapping_files(directory, mapping)
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=[],
        services=("wiki",),
        wiki_mapping=MOVED,
        mapping_extra={"default_user": ADMIN_LOGIN, **mapping},
    )
    return load_config(write_sandbox_config(directory, info, options))


def target_slug(slug: str) -> str:
    for root, moved in MOVED.items():
        if slug == root or slug.startswith(root + "/"):
            return moved + slug[len(root) :]
    return slug


def readable(info: dict[str, Any], org: str, token: str) -> set[str]:
    """The slugs (source slugs) `token` lists under the migrated roots of `org`."""
    found = set()
    with wiki(info, org, token) as client:
        for root in info["wiki_roots"]["source"]:
            where = root if org == "source" else target_slug(root)
            cursor = None
            while True:
                params = {"slug": where, "include_self": "true", "page_size": 100}
                reply = client.get("/pages/descendants", params={**params, "cursor": cursor or ""})
                if reply.status_code in (403, 404):
                    break
                body = reply.json()
                for ref in body["results"]:
                    found.add(root + str(ref["slug"])[len(where) :])
                cursor = body.get("next_cursor")
                if not cursor:
                    break
    return found


def page_id(info: dict[str, Any], org: str, slug: str) -> int:
    with wiki(info, org) as client:
        return int(client.get("/pages", params={"slug": slug}).json()["id"])


def test_the_plain_user_reads_exactly_what_it_read_and_verify_flags_a_page_opened_by_hand(
    sandbox: Any, tmp_path: Path
) -> None:
    info = sandbox.info
    config = write(tmp_path, info)
    summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert summary.complete, summary
    counts = {row.entity: row for row in summary.counts}
    assert counts["wiki_page_access"].loaded == counts["wiki_page"].to_load > 0

    everything = readable(info, "source", "admin")
    alice = readable(info, "source", "user")
    assert {"team/handbook/engineering", "team/runbooks/shared"} <= alice
    assert "team/handbook/hr" not in alice and "team/handbook/offsite" not in alice
    assert readable(info, "target", "user") == alice  # none more, none fewer
    assert readable(info, "target", "admin") == everything
    for slug in sorted(everything):
        assert roles(info, "target", target_slug(slug)) == roles(info, "source", slug), slug

    verified = asyncio.run(verify(config, all_services(), environ=environ(info)))
    assert verified.ok, verified.differences[:5]
    access = next(v for v in verified.entities if v.entity == "wiki_page_access")
    assert access.checked == access.found == access.loaded > 0

    hr = page_id(info, "target", "archive/handbook/hr")
    with wiki(info, "target") as client:  # someone opens the HR space by hand
        reply = client.post(f"/pages/{hr}/access", json={"user": {"uid": alice_uid(info)},
                                                        "role": "reader"})  # fmt: skip
        assert reply.status_code == 200, reply.text
    widened = asyncio.run(verify(config, all_services(), environ=environ(info)))
    flagged = {(d.source_id, d.field) for d in widened.differences}
    assert ("team/handbook/hr", "entries") in flagged and ("team/handbook/hr", "readers") in flagged
    assert {d.entity for d in widened.differences} == {"wiki_page_access"}
    below = {source_id for source_id, field in flagged if field == "readers"}
    assert below >= {"team/handbook/hr/salaries", "team/handbook/hr/reviews"}  # inherited


def test_a_later_run_carries_a_change_of_access_at_the_source_and_only_that(
    sandbox: Any, tmp_path: Path
) -> None:
    """The source opens `hr` to the plain user: the next run grants it in the target (one
    write), and the pages under hr that inherit read the same as at the source again."""
    info = sandbox.info
    config = write(tmp_path, info)
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    hr = page_id(info, "source", "team/handbook/hr")
    with wiki(info, "source") as client:
        body = {"user": {"uid": alice_uid(info, "source")}, "role": "reader"}
        reply = client.post(f"/pages/{hr}/access", json=body)
        assert reply.status_code == 200, reply.text
    before = writes(sandbox.stats())
    assert asyncio.run(run_all(config, all_services(), environ=environ(info))).complete
    assert written_since(before, writes(sandbox.stats())) == {"POST /v1/pages/{idx:int}/access": 1}
    for slug in ("team/handbook/hr", "team/handbook/hr/salaries", "team/handbook/hr/holidays"):
        assert roles(info, "target", target_slug(slug)) == roles(info, "source", slug), slug
    assert "team/handbook/hr/salaries" in readable(info, "target", "user")
    assert asyncio.run(verify(config, all_services(), environ=environ(info))).ok


def alice_uid(info: dict[str, Any], org: str = "target") -> str:
    """The plain user's uid in `org` (uids differ between orgs)."""
    with wiki(info, org, "user") as client:
        return str(client.get("/me").json()["identity"]["uid"])


def test_a_holder_mapped_to_no_one_leaves_its_page_restricted_and_named(
    sandbox: Any, tmp_path: Path
) -> None:
    """`hr` maps to a group the target lacks, `peggy` to a login it lacks: their pages end
    restricted to their (mapped) owner and the migrating admin; check, plan, the run and its
    report name page and holder; the pages under them read no wider than at the source. Once
    the mapping is fixed, `haul load --retry-failed` gives them the source's access."""
    info = sandbox.info
    config = write(tmp_path, info, groups_file="source group,target group\nhr,people-ops\n",
                   users_file="peggy,peggy.parker\n")  # fmt: skip
    asyncio.run(extract(config, all_services(), environ=environ(info)))
    checked = [f.what for f in asyncio.run(run_check(config, all_services(), environ(info)))]
    missing = "group people-ops (from source group hr) maps to no target holder"
    assert any(missing in line and "team/handbook/hr" in line for line in checked), checked
    plan = asyncio.run(make_plan(config, all_services(), environ=environ(info)))
    conflicts = {source_id: detail for entity, source_id, detail in plan.conflicts
                 if entity == "wiki_page_access"}  # fmt: skip
    assert "group hr" in conflicts["team/handbook/hr"]
    assert "user peggy" in conflicts["team/handbook/hr/reviews"]

    summary = asyncio.run(load(config, all_services(), environ=environ(info)))
    assert not summary.complete
    failed = {row.entity: row.failed for row in summary.counts}
    assert failed["wiki_page_access"] >= 2  # and every page peggy owns
    assert failed["wiki_page"] == failed["wiki_attachment"] == 0  # restricted, not left out
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    reasons = [
        f["reason"] for f in report["failures_by_reason"] if f["entity"] == "wiki_page_access"
    ]
    assert any("team/handbook/hr:" in r and "group hr" in r for r in reasons), reasons
    assert any("team/handbook/hr/reviews:" in r and "user peggy" in r for r in reasons), reasons

    assert roles(info, "target", "archive/handbook/hr") == {"heidi": "author"}
    # restricted means its own entries only: no longer what hr's entries give from above
    assert roles(info, "target", "archive/handbook/hr/reviews") == {"olga": "author"}
    for slug in ("team/handbook/hr/salaries", "team/handbook/hr/holidays"):
        source, target = roles(info, "source", slug), roles(info, "target", target_slug(slug))
        assert set(target) <= set(source), slug  # narrower, never wider
    assert "team/handbook/hr" not in readable(info, "target", "user")
    with wiki(info, "target") as client:  # restricted, and whole: its content is there
        content = client.get("/pages", params={"slug": "archive/handbook/hr", "fields": "content"})
        assert "Who reads this page" in content.json()["content"]

    (tmp_path / "groups_file.csv").write_text("", encoding="utf-8")  # the fix: hr by its name
    (tmp_path / "users_file.csv").write_text("", encoding="utf-8")
    fixed = asyncio.run(load(config, all_services(), environ=environ(info), retry_failed=True))
    assert fixed.complete, fixed
    for slug in ("team/handbook/hr", "team/handbook/hr/reviews", "team/handbook/hr/salaries"):
        assert roles(info, "target", target_slug(slug)) == roles(info, "source", slug), slug


def test_no_instant_of_the_load_shows_the_plain_user_a_page_the_source_refused_it(
    tmp_path: Path,
) -> None:
    """The load runs slowly (every page write and access change waits); meanwhile the plain
    user asks for each page it could not read at the source, again and again: never a 200."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as sandbox:
        info = sandbox.info
        config = write(tmp_path, info)
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        hidden = readable(info, "source", "admin") - readable(info, "source", "user")
        assert len(hidden) >= 8
        sandbox.set_faults("latency:25@/v1/pages/*")  # /pages?slug= (the poll) is not slowed
        seen: dict[str, set[int]] = {}
        done = threading.Event()
        poller = threading.Thread(target=poll, args=(info, sorted(hidden), seen, done))
        poller.start()
        try:
            summary = asyncio.run(load(config, all_services(), environ=environ(info)))
        finally:
            done.set()
            poller.join()
        sandbox.set_faults("")
        assert summary.complete, summary
        statuses = {status for codes in seen.values() for status in codes}
        assert 200 not in statuses, {slug: codes for slug, codes in seen.items() if 200 in codes}
        assert 403 in statuses and 404 in statuses  # polled before and after the pages existed
        assert readable(info, "target", "user") == readable(info, "source", "user")


def test_a_load_killed_mid_access_resumes_to_the_sources_access_with_no_exposure(
    sandbox: Any, tmp_path: Path
) -> None:
    """`haul load` SIGKILLed twice, each time while a restricted page's access row is in flight
    (grants slowed), then run to the end: every page's readers are the source's, verify passes,
    and the plain user, polling all along, never read a page the source refused it."""
    info = sandbox.info
    config = write(tmp_path, info)
    asyncio.run(extract(config, all_services(), environ=environ(info)))
    hidden = readable(info, "source", "admin") - readable(info, "source", "user")
    env = {**os.environ, TOKEN_ENV: info["tokens"]["admin"]}
    toml = tmp_path / "haul.toml"
    sandbox.set_faults("latency:40@/v1/pages/*/access")
    seen: dict[str, set[int]] = {}
    done = threading.Event()
    poller = threading.Thread(target=poll, args=(info, sorted(hidden), seen, done))
    poller.start()
    kills = 0
    try:
        restricted = set(hidden)
        for _ in range(2):
            kills += kill_with_access_in_flight(toml, config.staging_path, env, restricted)
        sandbox.set_faults("")
        finish(toml, "load", env)
    finally:
        done.set()
        poller.join()
    assert kills == 2, restricted
    assert 200 not in {status for codes in seen.values() for status in codes}
    for slug in sorted(readable(info, "source", "admin")):
        assert roles(info, "target", target_slug(slug)) == roles(info, "source", slug), slug
    verified = asyncio.run(verify(config, all_services(), environ=environ(info)))
    assert verified.ok, verified.differences[:5]


def kill_with_access_in_flight(
    config: Path, db: Path, env: dict[str, str], pages: set[str]
) -> bool:
    """Start `haul load`; SIGKILL it as soon as the access row of one of `pages` is in flight
    (that page is then taken out of `pages`)."""
    process = haul(config, "load", env=env)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        with StagingStore.open(db) as store:
            rows = store.ledger.iter_rows(status="in_flight", entity="wiki_page_access")
            caught = next((row.source_id for row in rows if row.source_id in pages), None)
        if caught and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.communicate()
            pages.discard(caught)
            return True
        time.sleep(0.005)
    process.communicate(timeout=120)
    return False


def poll(info: dict[str, Any], slugs: list[str], seen: dict[str, set[int]], done: Any) -> None:
    """Ask for each page as the plain user until `done`; record every status by slug."""
    with wiki(info, "target", "user") as client:
        while not done.is_set():
            for slug in slugs:
                params = {"slug": target_slug(slug), "fields": "content"}
                reply = client.get("/pages", params=params)
                seen.setdefault(slug, set()).add(reply.status_code)


def test_a_page_owner_who_left_the_target_org_fails_closed_and_named(
    sandbox: Any, tmp_path: Path
) -> None:
    """olga owns `team/handbook/hr/reviews` and has left the target org (listed there as
    dismissed, refused page access): check names her and the page, the load fails the page's
    access naming both (not the wiki's raw 400), and the page reads no wider than at the source:
    never a broader holder in her place."""
    info = sandbox.info
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}",
               "X-Org-Id": info["orgs"]["target"]}  # fmt: skip
    host = info["tracker"].rsplit("/v", 1)[0]
    httpx.post(f"{host}/_sandbox/users/olga/dismissal", headers=headers).raise_for_status()
    config = write(tmp_path, info)
    asyncio.run(extract(config, all_services(), environ=environ(info)))
    checked = [f.what for f in asyncio.run(run_check(config, all_services(), environ(info)))]
    assert any("user olga (left the target org)" in line and "team/handbook/hr/reviews" in line
               for line in checked), checked  # fmt: skip

    summary = asyncio.run(load(config, all_services(), environ=environ(info)))
    assert not summary.complete
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    reasons = [
        f["reason"] for f in report["failures_by_reason"] if f["entity"] == "wiki_page_access"
    ]
    assert any(
        "team/handbook/hr/reviews:" in r and "user olga (left the target org)" in r for r in reasons
    )
    assert not any("VALIDATION_ERROR" in r for r in reasons), reasons
    reviews = roles(info, "target", "archive/handbook/hr/reviews")
    assert "olga" not in reviews
    assert set(reviews) <= set(roles(info, "source", "team/handbook/hr/reviews"))
