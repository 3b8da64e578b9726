"""Forms end to end on the sandbox, over sockets: a survey's answers back-filled into tracker
issues (one per answer, with its original date, author and values, its files attached) and
another's into a wiki grid; a new answer at the source is back-filled by the next run and
nothing else is written; a template naming a slug the survey lacks stops before any write."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.check import run_check
from haul.pipelines.commands.run import extract, run_all
from haul.pipelines.config import ConfigError, load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.tracker.timefmt import tracker_time
from tests.helpers.forms_backfill import (
    PAGE,
    client,
    rules,
    source_answers,
    target_state,
    write_config,
)
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, writes, written_since


@pytest.fixture(scope="module")
def sandbox() -> Any:
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as running:
        yield running


def test_answers_become_issues_and_grid_rows_once_and_new_ones_follow(sandbox, tmp_path):
    info = sandbox.info
    support, _, feedback = info["surveys"]["source"]
    config = load_config(write_config(tmp_path, info))
    summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert summary.complete, [(c.entity, c.to_load, c.loaded, c.failed) for c in summary.counts]

    answers = source_answers(info, support)
    issues, grids = target_state(info)
    assert len(issues) == len(answers) > 0
    by_unique = {issue["unique"].rsplit("/", 1)[1]: issue for issue in issues}
    assert sorted(by_unique) == sorted(str(a["id"]) for a in answers)  # each answer exactly once
    for answer in answers:
        issue = by_unique[str(answer["id"])]
        assert issue["summary"] == f"{answer['subject']} ({answer['email']})"
        assert issue["createdAt"] == tracker_time(answer["created"])
        if answer.get("urgency"):
            wanted = {"low": "minor", "high": "critical"}.get(answer["urgency"], answer["urgency"])
            assert issue["priority"]["key"] == wanted
        assert issue["createdBy"]["id"]  # the answer's author, mapped to a target user
        files = answer.get("screenshot") or []
        assert sorted(a["name"] for a in issue["attachments"]) == sorted(
            path.rpartition("/")[2].partition("_")[2] for path in files
        )
    feedback_answers = source_answers(info, feedback)
    grid = grids["Feedback"]
    slugs = [c["slug"] for c in grid["structure"]["columns"]]
    assert slugs == ["answer_id", "answered_at", "score", "would_recommend", "comment"]
    rows = [dict(zip(slugs, row["row"], strict=True)) for row in grid["rows"]]
    assert [row["answer_id"] for row in rows] == [a["id"] for a in feedback_answers]
    assert [row["score"] for row in rows] == [int(a["score"]) for a in feedback_answers]

    # one new answer at the source: the next run back-fills it and writes nothing else
    async def fill() -> None:
        async with client(info, "forms", "source") as forms:
            await forms.fill(support, {"subject": "Late answer", "email": "alice@example.org",
                                       "urgency": "high"})  # fmt: skip
            await forms.fill(feedback, {"score": "7", "comment": "late"})

    asyncio.run(fill())
    before = writes(sandbox.stats())
    again = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert again.complete
    after = writes(sandbox.stats())
    written = written_since(before, after)
    assert written == {"POST /v3/issues/_import": 1, "POST /v1/grids/{gid}/rows": 1}
    issues, grids = target_state(info)
    assert len(issues) == len(answers) + 1
    late = next(issue for issue in issues if issue["summary"].startswith("Late answer"))
    assert late["priority"]["key"] == "critical"
    assert grids["Feedback"]["rows"][-1]["row"][2] == 7


def test_a_template_naming_a_slug_the_survey_lacks_stops_before_any_write(sandbox, tmp_path):
    info = sandbox.info
    config = load_config(write_config(tmp_path, info, summary="{subject} {nosuch}"))
    before = writes(sandbox.stats())
    with pytest.raises(ConfigError) as caught:
        asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert caught.value.key == "backfill[0].summary"
    assert "{nosuch} is not a question" in str(caught.value) and "subject, email" in str(
        caught.value
    )
    assert writes(sandbox.stats()) == before


def test_the_export_operation_runs_to_its_file(sandbox):
    info = sandbox.info
    support = info["surveys"]["source"][0]

    class Sink:
        data = b""

        def write(self, chunk: bytes) -> int:
            self.data += chunk
            return len(chunk)

    async def export() -> bytes:
        async with client(info, "forms", "source") as forms:
            sink = Sink()
            await forms.export_answers(support, sink, poll_s=0)
            return sink.data

    lines = asyncio.run(export()).decode().splitlines()
    assert lines[0].startswith("id,created,subject,email")
    assert len(lines) - 1 == len(source_answers(info, support))
    retired = httpx.get(info["forms"].replace("/v1", "/v3") + f"/surveys/{support}/answers")
    assert retired.status_code == 404


def test_an_address_on_another_domain_is_not_the_organisations_person(tmp_path):
    """`created_by = "{email}"`: heidi@outsider.example is not the organisation's heidi (only
    her part before @ is alike): the issue goes the documented way (the survey's author, else
    the default user) and the report names the address. grace@corp.example.org is the
    organisation's grace: `mapping.email_domains` names its domain."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as running:
        info = running.info
        support, _, feedback = info["surveys"]["source"]

        async def fill() -> None:
            async with client(info, "forms", "source") as forms:
                for subject, email in (("Outsider", "heidi@outsider.example"),
                                       ("Insider", "grace@corp.example.org")):  # fmt: skip
                    await forms.fill(support, {"subject": subject, "email": email})

        asyncio.run(fill())
        options = SandboxConfig(
            source_token_env=TOKEN_ENV,
            endpoint_extra={"read_rps": 2000, "write_rps": 2000},
            queues=[],
            services=("forms", "tracker", "wiki"),
            wiki_roots=[PAGE],
            surveys=[support, feedback],
            mapping_extra={"default_user": "robot", "email_domains": ["corp.example.org"]},
            sections=rules(info),
        )
        config = load_config(write_sandbox_config(tmp_path, info, options))
        summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
        assert summary.complete

        issues, _ = target_state(info)
        authors = {issue["summary"].partition(" (")[0]: issue["createdBy"]["display"]
                   for issue in issues}  # fmt: skip
        assert authors["Insider"].startswith("Grace")
        assert not authors["Outsider"].startswith("Heidi"), authors["Outsider"]
        assert any("heidi@outsider.example" in user for user in summary.unmapped_users)


def _support_queue_config(directory, info, create_missing: bool):
    """The tracker rule of `rules`, into SUP: a queue of neither org's scope nor the target."""
    support, _, feedback = info["surveys"]["source"]
    directory.mkdir()
    return load_config(
        write_sandbox_config(
            directory,
            info,
            SandboxConfig(
                source_token_env=TOKEN_ENV,
                endpoint_extra={"read_rps": 2000, "write_rps": 2000},
                queues=[],
                services=("forms", "tracker"),
                surveys=[support],
                mapping_extra={"default_user": "robot", "create_missing": create_missing},
                sections=rules(info)
                .replace('queue = "NEW"', 'queue = "SUP"')
                .split("\n[[backfill]]\nsurvey = " + f'"{feedback}"')[0],
            ),
        )
    )


def _target_queue_issues(info, queue):
    async def read():
        async with client(info, "tracker", "target") as tracker:
            keys = [q["key"] async for q in tracker.iter_queues()]
            found = [i async for i in tracker.search_issues(query=f"Queue: {queue}", per_page=100)]
            return keys, found

    return asyncio.run(read())


def test_a_backfill_queue_the_target_lacks_is_made_first_or_named_by_check(tmp_path):
    """A rule's queue the target lacks (and no scope queue): with `create_missing = false`
    check is an error naming the rule and nothing is written; by default check says the load
    makes it, and the load does, before its issues: every answer is an issue in it. (A
    sandbox of its own: the module's has these answers back-filled into NEW already.)"""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="tiny", seed=11) as running:
        _backfill_into_a_queue_the_target_lacks(running.info, tmp_path)


def _backfill_into_a_queue_the_target_lacks(info, tmp_path):
    support = info["surveys"]["source"][0]
    assert "SUP" not in _target_queue_issues(info, "SUP")[0]
    refused = _support_queue_config(tmp_path / "refuses", info, create_missing=False)
    asyncio.run(extract(refused, all_services(), environ=environ(info)))
    findings = asyncio.run(run_check(refused, all_services(), environ=environ(info)))
    errors = [finding.what for finding in findings if finding.level == "error"]
    assert errors == [
        "the target lacks queue SUP (the queue of backfill[0]) and [mapping] create_missing "
        "is false"
    ]
    assert "SUP" not in _target_queue_issues(info, "SUP")[0]

    config = _support_queue_config(tmp_path / "creates", info, create_missing=True)
    asyncio.run(extract(config, all_services(), environ=environ(info)))
    findings = asyncio.run(run_check(config, all_services(), environ=environ(info)))
    assert [f.what for f in findings if f.level == "error"] == []
    assert any(
        f.what == "the target lacks queue SUP (the queue of backfill[0]): the load creates it first"
        for f in findings
    )
    summary = asyncio.run(run_all(config, all_services(), environ=environ(info)))
    assert summary.complete, [(c.entity, c.to_load, c.loaded, c.failed) for c in summary.counts]
    queues, issues = _target_queue_issues(info, "SUP")
    assert "SUP" in queues
    assert len(issues) == len(source_answers(info, support)) > 0
