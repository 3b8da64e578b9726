"""`haul sandbox serve`: one JSON line describing the sandbox, then serving until terminated."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.helpers.cli_fixtures import read_line, source_get, start_haul, stop


def test_serve_prints_one_json_line_and_serves_until_terminated() -> None:
    """The line names the tracker URL, both org ids and both tokens; the tracker answers with
    them; the process keeps serving until SIGTERM, then exits cleanly with nothing more on
    stdout."""
    serving = start_haul("sandbox", "serve", "--size", "tiny", "--seed", "7")
    try:
        info = json.loads(read_line(serving, timeout=30))
        assert info["tracker"].startswith("http://127.0.0.1:")
        assert info["tracker"].endswith("/v3")
        assert set(info["orgs"]) == {"source", "target", "empty"}
        assert info["orgs"]["source"] != info["orgs"]["target"]
        assert set(info["tokens"]) == {"admin", "user", "admin_2", "admin_3", "admin_4"}

        for org in ("source", "target"):
            for token in info["tokens"].values():
                headers = {"Authorization": f"OAuth {token}", "X-Org-ID": info["orgs"][org]}
                reply = httpx.get(info["tracker"] + "/myself", headers=headers, timeout=10)
                assert reply.status_code == 200, (org, reply.text)
        assert serving.poll() is None

        assert "TEST" in [queue["key"] for queue in source_get(info, "/queues")]
        assert serving.poll() is None
    finally:
        rest, _ = stop(serving)  # SIGTERM

    assert serving.returncode == 0
    assert rest == ""
    with pytest.raises(httpx.ConnectError):
        httpx.get(info["tracker"] + "/myself", timeout=5)
