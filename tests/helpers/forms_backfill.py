"""A sandbox config that back-fills two surveys (into tracker issues and a wiki grid), and
readers of the source answers and of what the target holds after."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from haul.connectors.forms import FormsClient
from haul.connectors.tracker import TrackerClient
from haul.connectors.wiki import WikiClient
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.haul_fixtures import TOKEN_ENV

PAGE = "team/runbooks"


def rules(info: dict[str, Any], summary: str = "{subject} ({email})") -> str:
    support, _, feedback = info["surveys"]["source"]
    return (
        f'\n[[backfill]]\nsurvey = "{support}"\ninto = "tracker"\nqueue = "NEW"\n'
        f'summary = "{summary}"\nfields = {{ priority = "{{urgency}}" }}\ncreated_by = "{{email}}"\n'
        'values = { priority = { low = "minor", high = "critical" } }\n'
        f'\n[[backfill]]\nsurvey = "{feedback}"\ninto = "wiki_grid"\npage = "{PAGE}"\n'
        'title = "Feedback"\n'
    )


def write_config(
    directory: Path, info: dict[str, Any], summary: str = "{subject} ({email})"
) -> Path:
    support, _, feedback = info["surveys"]["source"]
    return write_sandbox_config(
        directory,
        info,
        SandboxConfig(
            source_token_env=TOKEN_ENV,
            endpoint_extra={"read_rps": 2000, "write_rps": 2000},
            queues=[],
            services=("forms", "tracker", "wiki"),
            wiki_roots=[PAGE],
            surveys=[support, feedback],
            mapping_extra={"default_user": "robot"},
            sections=rules(info, summary),
        ),
    )


def client(info: dict[str, Any], service: str, org: str) -> Any:
    cls = {"tracker": TrackerClient, "wiki": WikiClient, "forms": FormsClient}[service]
    return cls.connect(
        base_url=info[service], token=info["tokens"]["admin"], org_id=info["orgs"][org]
    )


def source_answers(info: dict[str, Any], survey: str) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        async with client(info, "forms", "source") as forms:
            answers = []
            async for page in forms.iter_answer_pages(survey):
                slugs = [c["slug"] for c in page.columns]
                for answer in page.answers:
                    cells = [(cell or {}).get("value") for cell in answer["data"]]
                    answers.append({"id": answer["id"], "created": answer["created"],
                                    **dict(zip(slugs, cells, strict=True))})  # fmt: skip
            return answers

    return asyncio.run(read())


def target_state(info: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    async def read() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with (
            client(info, "tracker", "target") as tracker,
            client(info, "wiki", "target") as wiki,
        ):
            issues = [
                issue async for issue in tracker.search_issues(query="Queue: NEW", per_page=100)
            ]
            for issue in issues:
                issue["attachments"] = await tracker.list_attachments(issue["key"])
            page = await wiki.get_page(PAGE, fields=None)
            refs = [ref async for ref in wiki.iter_grids(int(page["id"]))]
            grids = {ref["title"]: await wiki.get_grid(ref["id"]) for ref in refs}
            return issues, grids

    return asyncio.run(read())
