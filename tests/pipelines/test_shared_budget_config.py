"""The config's two ways of sharing a token's rate: `[tuning] shared_budget` (a file,
relative to the config's folder) and `budget_share` on a side (a static split), never both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from haul.pipelines.config import ConfigError, parse_config

SOURCE = {"tracker_url": "https://t.example/v3", "org_id": "1", "token_env": "T"}


def config(**sections: Any) -> dict[str, Any]:
    return {
        "source": SOURCE,
        "scope": {"queues": ["TEST"]},
        "staging": {"path": "haul.db"},
        **sections,
    }


def test_the_shared_budget_file_is_relative_to_the_config(tmp_path: Path) -> None:
    parsed = parse_config(config(tuning={"shared_budget": "run/budget.json"}), base_dir=tmp_path)
    assert parsed.tuning.shared_budget == tmp_path.resolve() / "run" / "budget.json"
    assert parse_config(config(), base_dir=tmp_path).tuning.shared_budget is None


def test_a_symlink_at_the_shared_budget_path_is_kept_for_the_file_to_refuse(
    tmp_path: Path,
) -> None:
    """The folder is resolved, the file not: a symbolic link there stays the path (which
    the budget file then refuses), never the file it points to; the lock wait has a default
    and takes a duration."""
    (tmp_path / "elsewhere.json").write_text("{}")
    (tmp_path / "budget.json").symlink_to(tmp_path / "elsewhere.json")
    parsed = parse_config(config(tuning={"shared_budget": "budget.json"}), base_dir=tmp_path)
    assert parsed.tuning.shared_budget == tmp_path.resolve() / "budget.json"
    assert parsed.tuning.shared_budget_wait == 30.0
    waits = parse_config(config(tuning={"shared_budget_wait": "2m"}), base_dir=tmp_path)
    assert waits.tuning.shared_budget_wait == 120.0


def test_a_side_may_split_its_budgets(tmp_path: Path) -> None:
    parsed = parse_config(config(source={**SOURCE, "budget_share": 4}), base_dir=tmp_path)
    assert parsed.source.budget_share == 4
    with pytest.raises(ConfigError, match=r"source\.budget_share"):
        parse_config(config(source={**SOURCE, "budget_share": 0}), base_dir=tmp_path)


def test_a_shared_file_and_a_split_together_are_refused(tmp_path: Path) -> None:
    """Two answers to one question: a config error naming the split's key."""
    both = config(source={**SOURCE, "budget_share": 2}, tuning={"shared_budget": "b.json"})
    with pytest.raises(ConfigError, match=r"source\.budget_share: give \[tuning\] shared_budget"):
        parse_config(both, base_dir=tmp_path)
