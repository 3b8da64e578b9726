"""Two `haul extract` processes of one token sharing its budgets through `[tuning]
shared_budget`: both keep their figures in the one file, and each run's summary and report
say what the process sent and what the sharers sent together, against the limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from haul.pipelines.config.sandbox import SandboxConfig, write_sandbox_config
from tests.helpers.cli_fixtures import SOURCE_TOKEN_ENV, finish, haul_env, start_haul

LIMIT = 40


def extract_config(directory: Path, info: dict[str, Any], queue: str, budget: Path) -> Path:
    options = SandboxConfig(
        source_token_env=SOURCE_TOKEN_ENV,
        with_target=False,
        queues=[queue],
        staging_path="staging/haul.db",
        endpoint_extra={"read_rps": LIMIT},
        sections=f'\n[tuning]\nshared_budget = "{budget}"\n',
    )
    return write_sandbox_config(directory, info, options)


def test_two_extracts_share_one_token_budget(sandbox: Any, tmp_path: Path) -> None:
    """Two extracts of one token name one file: one bucket for the tracker's reads holds
    both processes' figures and no token; each summary and report gives this process's
    rate, its sharers' and the limit; the write budgets, unused, are not reported."""
    info = sandbox.info
    budget = tmp_path / "budget.json"
    queues = info["queues"]["source"][:2]
    env = haul_env({SOURCE_TOKEN_ENV: info["tokens"]["admin"]})
    configs = [
        extract_config(tmp_path / f"part{n}", info, queue, budget) for n, queue in enumerate(queues)
    ]
    running = [start_haul("extract", "--config", config, env=env) for config in configs]
    outputs = [finish(process, timeout=120) for process in running]
    assert [process.returncode for process in running] == [0, 0], outputs

    buckets = json.loads(budget.read_text())["buckets"]
    reads = [key for key in buckets if key.startswith("tracker read ")]
    assert len(reads) == 1, "one token, one service, one direction: one bucket"
    assert len(buckets[reads[0]]["members"]) == 2
    assert info["tokens"]["admin"] not in budget.read_text()

    for config, (stdout, _) in zip(configs, outputs, strict=True):
        assert "reads on a shared budget: this process" in stdout
        assert f"of a limit of {LIMIT}/s" in stdout
        report = json.loads((config.parent / "staging" / "report.json").read_text())
        shared = report["details"]["tracker_source_shared_budget"]["read"]
        assert shared["limit_rps"] == LIMIT
        assert 1 <= shared["sharers"] <= 2
        assert 0 < shared["process_rps"] <= shared["shared_rps"]
        assert "writes on a shared budget" not in stdout
