"""The process forms: ``python -m haul.sandbox`` prints one JSON line and stops on a signal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx

from haul.sandbox.server import start_sandbox


def test_command_line_serves_until_sigterm() -> None:
    """One JSON line describes the sandbox; SIGTERM ends the process cleanly."""
    command = [sys.executable, "-m", "haul.sandbox", "--seed", "4", "--faults", "latency:1"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            info = json.loads(process.stdout.readline())
            assert set(info) >= {"tracker", "wiki", "forms", "orgs", "tokens", "wiki_roots"}
            assert info["wiki"].endswith("/v1") and info["forms"].endswith("/v1")
            assert info["tracker"].startswith("http://127.0.0.1:")
            assert info["tracker"].endswith("/v3")
            token, org = info["tokens"]["user"], info["orgs"]["source"]
            headers = {"Authorization": f"OAuth {token}", "X-Org-ID": org}
            assert httpx.get(info["tracker"] + "/myself", headers=headers).status_code == 200
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0
        finally:
            if process.poll() is None:  # a failed assertion must not leave it running
                process.kill()


def test_fixed_port_tokens_and_org_ids() -> None:
    """A given port is used; tokens differ per start; org ids are numeric and follow the seed."""
    with start_sandbox(seed=9) as first:
        port = int(first.info["tracker"].rsplit(":", 1)[1].split("/")[0])
        orgs, tokens = first.info["orgs"], first.info["tokens"]
    with start_sandbox(seed=9, port=port) as second:
        assert second.info["tracker"] == f"http://127.0.0.1:{port}/v3"
        assert second.info["orgs"] == orgs and second.info["tokens"] != tokens
    assert all(org.isdigit() for org in orgs.values()) and len(set(orgs.values())) == 3
    assert tokens["admin"] != tokens["user"]
