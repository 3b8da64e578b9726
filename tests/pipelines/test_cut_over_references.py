"""Cut-over, end to end over real sockets: after `haul run`, nothing in the target's texts
points back at the source (its files, its web hosts, the logins the users mapping maps
away), the inline images show the target's files, and `haul verify` finds a reference to the
source planted by hand afterwards. Code (fenced, inline, %%...%%, ""..."") is the exception:
it is written as the source holds it, and verify counts nothing in it."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from haul.pipelines.registry import services as all_services
from tests.helpers.cli_fixtures import haul_env, run_haul
from tests.helpers.haul_fixtures import TOKEN_ENV, environ, source_queues

INLINE = re.compile(r"!\[(?P<name>[^\]]+)\]\(/ajax/v2/attachments/(?P<id>\w+)\?inline=true\)")
FILE_REF = re.compile(r"/(?:ajax/v2/attachments/(\w+)|[A-Z]+-\d+/attachments/(\w+))")
MENTION = re.compile(r"(?:(?<![\w@.:/])@|staff:)(\w[\w.-]*\w)")


def tracker(info: dict[str, Any], org: str) -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-ID": info["orgs"][org]}
    return httpx.Client(base_url=info["tracker"], headers=headers, timeout=30)


def wiki(info: dict[str, Any], org: str) -> httpx.Client:
    headers = {"Authorization": f"OAuth {info['tokens']['admin']}", "X-Org-Id": info["orgs"][org]}
    return httpx.Client(base_url=info["wiki"], headers=headers, timeout=30)


def issues(client: httpx.Client, queues: list[str]) -> Iterator[dict[str, Any]]:
    for queue in queues:
        for page in itertools.count(1):
            params = {"perPage": 100, "page": page}
            found = client.post("/issues/_search", json={"queue": queue}, params=params).json()
            yield from found
            if len(found) < 100:
                break


def tracker_texts(client: httpx.Client, queues: list[str]) -> Iterator[tuple[str, str, dict]]:
    """(issue key, text, the issue's files by id) of every description and comment."""
    for issue in issues(client, queues):
        key = issue["key"]
        files = {str(a["id"]): a for a in client.get(f"/issues/{key}/attachments").json()}
        yield key, issue.get("description") or "", files
        for comment in client.get(f"/issues/{key}/comments", params={"perPage": 100}).json():
            yield key, comment.get("text") or "", files


def wiki_texts(client: httpx.Client, roots: list[str]) -> Iterator[str]:
    for root in roots:
        listing = client.get("/pages/descendants", params={"slug": root, "page_size": 100}).json()
        for ref in listing["results"]:
            page = client.get(f"/pages/{ref['id']}", params={"fields": "content"}).json()
            yield page.get("content") or ""
            comments = client.get(f"/pages/{ref['id']}/comments", params={"page_size": 100})
            yield from (c.get("body") or "" for c in comments.json()["results"])


def mentioned(info: dict[str, Any], queues: list[str]) -> str:
    """A login the source's texts mention (the one the test maps away)."""
    with tracker(info, "source") as client:
        reply = client.get("/users", params={"perPage": 100}).json()
        logins = {u["login"] for u in reply["users"]}
        counts: dict[str, int] = {}
        for _, text, _ in tracker_texts(client, queues):
            for login in MENTION.findall(text):
                if login in logins:
                    counts[login] = counts.get(login, 0) + 1
    return max(sorted(counts), key=lambda login: counts[login])


def write(tmp_path: Path, info: dict[str, Any], queues: list[str], away: str) -> Path:
    (tmp_path / "users.csv").write_text(f"{away},robot\n", encoding="utf-8")
    options = SandboxConfig(
        source_token_env=TOKEN_ENV,
        endpoint_extra={"read_rps": 2000, "write_rps": 2000},
        queues=queues,
        services=("tracker", "wiki"),
        mapping_extra={"default_user": "robot", "users_file": "users.csv"},
    )
    return write_sandbox_config(tmp_path, info, options)


@pytest.fixture(scope="module")
def small_sandbox() -> Iterator[Any]:
    """The small org of the issue's "done when" (a thousand issues, three wiki trees)."""
    from haul.sandbox import server as sandbox_server

    with sandbox_server.start_sandbox(size="small", seed=5) as running:
        yield running


def test_after_a_run_no_text_points_back_at_the_source(sandbox: Any, tmp_path: Path) -> None:
    """On the tiny org, through the CLI (exit codes)."""
    cut_over(sandbox.info, tmp_path, cli=True)


@pytest.mark.slow  # the same on the small org; the tiny one above runs by default
@pytest.mark.timeout(1800)
def test_after_a_run_of_the_small_org_no_text_points_back_at_the_source(
    small_sandbox: Any, tmp_path: Path
) -> None:
    """On the small org, in this process (a run longer than a CLI test waits for)."""
    cut_over(small_sandbox.info, tmp_path, cli=False)


def run(config: Path, info: dict[str, Any], *, cli: bool) -> None:
    if cli:
        env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
        ran = run_haul("run", "--config", config, env=env)
        assert ran.returncode == 0, ran.stderr[-3000:]
        return
    summary = asyncio.run(run_all(load_config(config), all_services(), environ=environ(info)))
    assert summary.failed == 0 and summary.complete


def verified(config: Path, info: dict[str, Any], *, cli: bool) -> tuple[int, int]:
    """haul verify's exit status and its count of references to the source left."""
    if cli:
        env = haul_env({TOKEN_ENV: info["tokens"]["admin"]})
        done = run_haul("verify", "--config", config, env=env)
        left = re.search(r"references to the source left in the target: (\d+)", done.stdout)
        assert left, done.stdout[-3000:] + done.stderr[-3000:]
        return done.returncode, int(left.group(1))
    result = asyncio.run(verify(load_config(config), all_services(), environ=environ(info)))
    return (0 if result.ok else 3), result.by_kind().get("source reference", 0)


def cut_over(info: dict[str, Any], tmp_path: Path, *, cli: bool) -> None:
    """Run, read every text of the target back, verify, plant a reference, verify again."""
    queues = source_queues(info)
    away = mentioned(info, queues)
    config = write(tmp_path, info, queues, away)
    with tracker(info, "source") as client:
        source_files = {
            str(a["id"])
            for issue in issues(client, queues)
            for a in client.get(f"/issues/{issue['key']}/attachments").json()
        }

    issue, code = write_code(info, queues, away)

    run(config, info, cli=cli)

    source_hosts = tuple(info["web"]["source"].values())
    code_left_as_written(info, issue, code)
    target_queues = ["NEW" if q == "TEST" else q for q in queues]
    inline = 0
    with tracker(info, "target") as client:
        for key, text, files in tracker_texts(client, target_queues):
            text = text.replace(code, "")
            assert not any(host in text for host in source_hosts), (key, text)
            assert away not in MENTION.findall(text), (key, text)
            for a, b in FILE_REF.findall(text):
                assert (a or b) in files, (key, text)  # the target's own file of this issue
                assert (a or b) not in source_files - set(files), (key, text)
            for image in INLINE.finditer(text):
                assert files[image["id"]]["name"] == image["name"]
                inline += 1
    assert inline > 0
    with wiki(info, "target") as client:
        for text in wiki_texts(client, list(info["wiki_roots"]["source"])):
            text = text.replace(code, "")
            assert not any(host in text for host in source_hosts), text
            assert info["web"]["target"]["wiki"] in text or "sandbox.test" not in text

    assert verified(config, info, cli=cli) == (0, 0)

    plant(info, target_queues)
    assert verified(config, info, cli=cli) == (3, 1)


def write_code(info: dict[str, Any], queues: list[str], away: str) -> tuple[str, str]:
    """Code in a source description and a root page, holding mentions of the login mapped
    away, a key and URLs on the source's hosts, in every code form: (issue key, the code)."""
    tracker_host, wiki_host = info["web"]["source"]["tracker"], info["web"]["source"]["wiki"]
    code = (
        f"```sh\ngit log --author=@{away} # {tracker_host}/TEST-1\n```\n\n"
        f"`curl {wiki_host}/team -u @{away}` %%{tracker_host}/TEST-2 staff:{away}%%"
        f' ""@{away}""'
    )
    with tracker(info, "source") as client:
        (issue,) = client.post("/issues/_search", json={"queue": queues[0]}).json()[:1]
        text = f"{issue.get('description') or ''}\n\n{code}"
        assert client.patch(f"/issues/{issue['key']}", json={"description": text}).is_success
    with wiki(info, "source") as client:
        root = info["wiki_roots"]["source"][0]
        page = client.get("/pages", params={"slug": root, "fields": "content"}).json()
        text = f"{page.get('content') or ''}\n\n{code}"
        assert client.post(f"/pages/{page['id']}", json={"content": text}).is_success
    return issue["key"], code


def code_left_as_written(info: dict[str, Any], key: str, code: str) -> None:
    """The code is in the target as the source wrote it: no mention, URL or key rewritten."""
    target_key = f"NEW-{key.partition('-')[2]}" if key.startswith("TEST-") else key
    with tracker(info, "target") as client:
        assert code in client.get(f"/issues/{target_key}").json()["description"]
    with wiki(info, "target") as client:
        root = info["wiki_roots"]["source"][0]
        page = client.get("/pages", params={"slug": root, "fields": "content"}).json()
        assert code in page["content"]


def plant(info: dict[str, Any], queues: list[str]) -> None:
    """A link to the source's tracker, typed into a target comment by hand."""
    with tracker(info, "target") as client:
        for issue in issues(client, queues):
            comments = client.get(f"/issues/{issue['key']}/comments").json()
            if comments:
                text = comments[0]["text"] + f" (was {info['web']['source']['tracker']}/TEST-1)"
                path = f"/issues/{issue['key']}/comments/{comments[0]['id']}"
                assert client.patch(path, json={"text": text}).status_code == 200
                return
    pytest.fail("no target comment to plant a reference in")
