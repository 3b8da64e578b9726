"""The target's hard limits are met before the load: a file over `[limits]
attachment_max_bytes` is named by `haul check` after the extract and by `haul plan` (each with
the limit and where its bytes are staged), before any write; the load fails it with the same
reason without sending it, and loads every other file.

The sandbox serves the same limit, lowered to 10 KB (its tiny org's files are 1-24 KB), so a
file the check missed would fail with the target's 413 instead. The same holds for a comment
over `comment_max_chars` and the comments of an issue past `comments_per_issue` (the oldest
load; the sandbox answers 422 to the others).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.plan import make_plan
from haul.pipelines.commands.run import extract, load
from haul.pipelines.config import Config, load_config
from haul.pipelines.registry import services as all_services
from haul.sandbox.tracker.model import Limits
from haul.state.store import StagingStore
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import environ, source_queues, write_config, writes

FILE_LIMIT = 10 * 1024
LIMITS = f"\n[limits]\nattachment_max_bytes = {FILE_LIMIT}\n"


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Config]]:
    """A tiny sandbox whose tracker refuses files over 10 KB, extracted with the same limit."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as running:
        running.set_limits(Limits(file_bytes=FILE_LIMIT))
        info = running.info
        folder = tmp_path_factory.mktemp("limits")
        path = write_config(folder, info, queues=source_queues(info), extra=LIMITS)
        config = load_config(path)
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        yield running, config


def over_limit(config: Config) -> dict[str, Path]:
    """The staged attachments over the limit: source id -> where their bytes are staged."""
    with StagingStore.open(config.staging_path) as store:
        return {
            record.source_id: store.blobs.path(record.blob or "")
            for record in store.iter_records("attachment")
            if record.raw["size"] > FILE_LIMIT
        }


def test_check_names_each_file_over_the_size_limit_before_the_load(
    staged: tuple[Any, Config],
) -> None:
    running, config = staged
    big = over_limit(config)
    assert big, "the tiny org should stage files over 10 KB"
    before = writes(running.stats())
    findings = asyncio.run(run_check(config, all_services(), environ(running.info)))
    named = {f.what.split(":")[0]: f for f in findings if "attachment_max_bytes" in f.what}
    assert set(named) == {f"attachment {source_id}" for source_id in big}
    for source_id, where in big.items():
        finding = named[f"attachment {source_id}"]
        assert finding.level == "warning"
        assert f"limit of {FILE_LIMIT} bytes" in finding.what
        assert str(where) in finding.what and where.exists()
    assert writes(running.stats()) == before


def test_haul_check_prints_each_file_over_the_size_limit(staged: tuple[Any, Config]) -> None:
    """The command a user types: each file named on its own line, the check still passing."""
    running, config = staged
    big = over_limit(config)
    config_path = config.folder / "haul.toml"
    done = run_haul("check", "--config", config_path, env=haul_env(environ(running.info)))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "attachment_max_bytes" in line]
    assert len(lines) == len(big)
    for source_id, where in big.items():
        assert any(f"attachment {source_id}: " in line and str(where) in line for line in lines)


def test_plan_names_them_and_the_load_fails_them_with_the_same_reason(
    staged: tuple[Any, Config],
) -> None:
    running, config = staged
    big = over_limit(config)
    plan = asyncio.run(make_plan(config, all_services(), environ=environ(running.info)))
    conflicts = [c for c in plan.conflicts if c[0].endswith("attachment")]
    planned = {source_id: why for _, source_id, why in conflicts}
    assert set(planned) == set(big)
    assert all(f"limit of {FILE_LIMIT} bytes" in why for why in planned.values())
    config_path = config.folder / "haul.toml"
    printed = run_haul("plan", "--config", config_path, env=haul_env(environ(running.info)))
    for entity, source_id, why in conflicts:
        assert f"conflict: {entity} {source_id}: {why}" in printed.stdout

    asyncio.run(load(config, all_services(), environ=environ(running.info)))
    with StagingStore.open(config.staging_path) as store:
        rows = [r for r in store.ledger.iter_rows() if r.entity.endswith("attachment")]
        failed = {r.source_id: r.error or "" for r in rows if r.status == "failed"}
        assert set(failed) == set(big)
        for source_id, error in failed.items():
            assert planned[source_id] in error and str(big[source_id]) in error
        assert {r.status for r in rows if r.source_id not in big} == {"done"}
        loaded = sum(r.status == "done" for r in rows)
        issues = [r.target_id or "" for r in store.ledger.iter_rows(entity="issue", status="done")]
    sizes = _target_file_sizes(running, issues)
    assert len(sizes) == loaded and max(sizes) <= FILE_LIMIT
    listed = run_haul("failures", "--config", config_path, env=haul_env(environ(running.info)))
    for source_id, where in big.items():
        assert source_id in listed.stdout and str(where) in listed.stdout, listed.stdout


def _target_file_sizes(running: Any, issues: list[str]) -> list[int]:
    """The size of every file on these target issues, read through the plain API."""
    info = running.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    sizes = []
    for key in issues:
        reply = httpx.get(f"{info['tracker']}/issues/{key}/attachments", headers=headers)
        sizes += [attachment["size"] for attachment in reply.raise_for_status().json()]
    return sizes


def test_the_sandbox_refuses_a_file_over_its_limit_with_413(staged: tuple[Any, Config]) -> None:
    running, config = staged
    info = running.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    with StagingStore.open(config.staging_path) as store:
        issue = next(iter(store.iter_records("issue"))).raw
    params = {"filename": "big.bin", "createdAt": issue["createdAt"], "createdBy": "robot"}
    reply = httpx.post(
        f"{info['tracker']}/issues/{issue['key']}/attachments/_import",
        params=params,
        files={"file": ("big.bin", b"x" * (FILE_LIMIT + 1))},
        headers=headers,
    )
    assert reply.status_code == 413
    assert reply.json() == {
        "errors": {},
        "errorMessages": [f"File is too large: at most {FILE_LIMIT} bytes"],
        "statusCode": 413,
    }


COMMENT_CHARS, COMMENTS_PER_ISSUE = 150, 8
COMMENT_LIMITS = (
    f"\n[limits]\ncomment_max_chars = {COMMENT_CHARS}\ncomments_per_issue = {COMMENTS_PER_ISSUE}\n"
)


@pytest.fixture(scope="module")
def staged_comments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Config]]:
    """A tiny sandbox whose tracker refuses comments over 150 characters and the 9th comment
    of an issue (its busiest issues have 10-25), extracted with the same limits."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=5) as running:
        running.set_limits(
            Limits(comment_chars=COMMENT_CHARS, comments_per_issue=COMMENTS_PER_ISSUE)
        )
        info = running.info
        folder = tmp_path_factory.mktemp("comment_limits")
        # queues keep their keys: a text is written as long as it is staged
        queues = source_queues(info)
        path = write_config(folder, info, queues=queues, mapping={}, extra=COMMENT_LIMITS)
        config = load_config(path)
        asyncio.run(extract(config, all_services(), environ=environ(info)))
        yield running, config


def comments_over(config: Config) -> tuple[set[str], set[str]]:
    """The staged comments over the length limit, and those after an issue's first 8."""
    by_issue: dict[str, list[tuple[str, str]]] = {}
    too_long = set()
    with StagingStore.open(config.staging_path) as store:
        for record in store.iter_records("comment"):
            if len(record.raw["text"]) > COMMENT_CHARS:
                too_long.add(record.source_id)
            created = record.raw["createdAt"]
            by_issue.setdefault(record.parent or "", []).append((created, record.source_id))
    past = {i for rows in by_issue.values() for _, i in sorted(rows)[COMMENTS_PER_ISSUE:]}
    return too_long, past


def test_check_and_plan_name_comments_over_the_length_and_count_limits(
    staged_comments: tuple[Any, Config],
) -> None:
    running, config = staged_comments
    too_long, past = comments_over(config)
    assert too_long and past - too_long
    before = writes(running.stats())
    findings = asyncio.run(run_check(config, all_services(), environ(running.info)))
    named = {f.what.split(":")[0] for f in findings if "[limits] comment" in f.what}
    assert named == {f"comment {source_id}" for source_id in too_long | past}
    long_lines = [f.what for f in findings if "comment_max_chars" in f.what]
    assert all(f"limit of {COMMENT_CHARS}" in line for line in long_lines)
    plan = asyncio.run(make_plan(config, all_services(), environ=environ(running.info)))
    assert {source_id for entity, source_id, _ in plan.conflicts if entity == "comment"} == (
        too_long | past
    )
    assert writes(running.stats()) == before


def test_the_load_fails_comments_over_a_limit_and_loads_the_rest(
    staged_comments: tuple[Any, Config],
) -> None:
    running, config = staged_comments
    too_long, past = comments_over(config)
    asyncio.run(load(config, all_services(), environ=environ(running.info)))
    with StagingStore.open(config.staging_path) as store:
        rows = list(store.ledger.iter_rows(entity="comment"))
        issues = [r.target_id or "" for r in store.ledger.iter_rows(entity="issue", status="done")]
    failed = {r.source_id: r.error or "" for r in rows if r.status == "failed"}
    assert set(failed) == too_long | past
    assert all("[limits] comment" in error for error in failed.values())
    assert {r.status for r in rows if r.source_id not in failed} == {"done"}
    texts = _target_comment_texts(running, issues)
    assert sum(map(len, texts)) == len(rows) - len(failed)
    assert max(map(len, texts)) <= COMMENTS_PER_ISSUE
    assert max(len(text) for comments in texts for text in comments) <= COMMENT_CHARS


def _target_comment_texts(running: Any, issues: list[str]) -> list[list[str]]:
    """The comment texts of each target issue, read through the plain API."""
    info = running.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    texts = []
    for key in issues:
        reply = httpx.get(f"{info['tracker']}/issues/{key}/comments", headers=headers)
        texts.append([comment["text"] for comment in reply.raise_for_status().json()])
    return texts


def test_the_sandbox_refuses_a_long_comment_and_one_past_the_count_with_422(
    staged_comments: tuple[Any, Config],
) -> None:
    running, config = staged_comments
    info = running.info
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["source"],
    }
    with StagingStore.open(config.staging_path) as store:
        counts: dict[str, int] = {}
        for record in store.iter_records("comment"):
            counts[record.parent or ""] = counts.get(record.parent or "", 0) + 1
        issues = list(store.iter_records("issue"))
        quiet = next(r for r in issues if counts.get(r.source_id, 0) < COMMENTS_PER_ISSUE)
        busy = max(counts, key=lambda key: counts[key])
        busy_issue = store.get_record("issue", busy)
    assert busy_issue is not None

    def comment(issue: dict[str, Any], text: str) -> httpx.Response:
        body = {"text": text, "createdAt": issue["createdAt"], "createdBy": "robot"}
        url = f"{info['tracker']}/issues/{issue['key']}/comments/_import"
        return httpx.post(url, json=body, headers=headers)

    long = comment(quiet.raw, "x" * (COMMENT_CHARS + 1))
    assert long.status_code == 422
    assert long.json()["errors"] == {"text": f"Must be at most {COMMENT_CHARS} characters"}
    past = comment(busy_issue.raw, "one more")
    assert past.status_code == 422
    assert past.json()["errors"] == {
        "text": f"An issue holds at most {COMMENTS_PER_ISSUE} comments"
    }
