"""The seed's last weeks end the day before the sandbox's today, so recent throughput is
there however late it runs; everything else of the seed is as at any other date."""

from __future__ import annotations

from datetime import UTC, datetime

from haul.sandbox.tracker.model import Org
from haul.sandbox.tracker.seed.generate import DAY, HISTORY_END, build_world

TODAY = int(datetime(2026, 6, 15, 13, 30, tzinfo=UTC).timestamp() * 1000)


def source(today: int) -> Org:
    world = build_world(1, "tiny", admin_token="a", user_token="b", today=today)
    return world.org_by_role("source")


def test_the_last_weeks_end_the_day_before_today_with_the_same_records() -> None:
    """Issues, statuses, links and records are those of a history that ends in 2024; only the
    recent issues' times move, by whole days, and every time stays before today's start."""
    then, now = source(HISTORY_END), source(TODAY)
    shift = (TODAY // DAY) * DAY - HISTORY_END
    assert list(then.issues) == list(now.issues)
    moved = 0
    for key, old in then.issues.items():
        new = now.issues[key]
        assert (new.status, new.resolution, new.queue) == (old.status, old.resolution, old.queue)
        assert new.created_at - old.created_at in (0, shift)
        moved += new.created_at != old.created_at
        assert new.updated_at < (TODAY // DAY) * DAY
        old_records, new_records = then.records(old), now.records(new)
        assert [c.id for c in old_records.comments] == [c.id for c in new_records.comments]
        assert [c.created_at - old.created_at for c in old_records.comments] == [
            c.created_at - new.created_at for c in new_records.comments
        ]
    assert 0 < moved < len(then.issues) // 2
    ends = {(link.source, link.target, link.type) for link in now.links.values()}
    assert ends == {(link.source, link.target, link.type) for link in then.links.values()}


def test_some_issues_were_resolved_in_the_twelve_weeks_before_today() -> None:
    """A forecast samples the last 84 days' throughput: the seed has some there."""
    recent = [
        issue
        for issue in source(TODAY).issues.values()
        if issue.resolved_at is not None and TODAY - 84 * DAY <= issue.resolved_at < TODAY
    ]
    assert len(recent) >= 2
