"""What the sandbox gives a sync test: a per-field history of every edit (so a test can edit
the same issue on both sides and read who changed what), and a count of the writes sent with
notifications on (so a test sees whether a sync asked the service to stay quiet)."""

from __future__ import annotations

from typing import Any

import httpx

from haul.sandbox.server import RunningSandbox
from tests.helpers.sandbox_clients import client_for


def _changes(client: httpx.Client, key: str) -> list[tuple[str, Any, Any]]:
    """(field, from, to) of each field change in the issue's changelog, oldest first."""
    entries = client.get(f"/issues/{key}/changelog").json()
    return [
        (change["field"]["id"], change.get("from"), change.get("to"))
        for entry in entries
        for change in entry.get("fields") or []
    ]


def test_every_field_an_edit_changes_is_in_the_issues_history(
    source: httpx.Client,
) -> None:
    """Story points, a custom field, components, tags: each change with its before and after,
    a second edit of the same field starting from the first's value."""
    key = "DEV-4"
    assert (
        source.patch(f"/issues/{key}", json={"storyPoints": 3, "customerName": "Acme"}).status_code
        == 200
    )
    assert (
        source.patch(f"/issues/{key}", json={"storyPoints": 5, "components": [6]}).status_code
        == 200
    )
    assert source.patch(f"/issues/{key}", json={"tags": ["both-sides"]}).status_code == 200

    changes = _changes(source, key)

    points = [(before, after) for name, before, after in changes if name == "storyPoints"]
    assert points[-2:] == [(points[-2][0], 3), (3, 5)]
    assert ("customerName", None, "Acme") in [
        (name, before, after) for name, before, after in changes if name == "customerName"
    ][-1:]
    assert any(name == "components" and after == [6] for name, _, after in changes)
    assert any(name == "tags" and after == ["both-sides"] for name, _, after in changes)


def test_writes_sent_with_notifications_on_are_counted_by_route(fresh: RunningSandbox) -> None:
    """An issue's edit notifies (it takes no `notify`); a move asking `notify=false` does not;
    one that does not ask does; reads and admin imports never do."""
    with client_for(fresh, "source") as source:
        assert source.patch("/issues/DEV-1", json={"summary": "Edited"}).status_code == 200
        quiet = source.post("/issues/DEV-2/_move", params={"queue": "OPS", "notify": "false"})
        loud = source.post("/issues/DEV-3/_move", params={"queue": "OPS"})
        assert (quiet.status_code, loud.status_code) == (200, 200)
        source.get("/issues/DEV-1")
        source.post("/issues/_search", json={"query": "Queue: DEV"})

    counted = fresh.notified()

    assert counted["by_route"] == {
        "PATCH /v3/issues/{key}": 1,
        "POST /v3/issues/{key}/_move": 1,
    }
    assert counted["writes"] == 2
    control = httpx.get(
        f"{fresh.info['tracker'].rsplit('/v3', 1)[0]}/_sandbox/notified",
        headers={"Authorization": f"OAuth {fresh.info['tokens']['admin']}"},
    )
    assert control.json() == counted


def test_an_edit_naming_the_version_it_read_is_refused_once_the_issue_moved_on(
    source: httpx.Client,
) -> None:
    """PATCH /issues/{key}?version=N (the documented lock): applied while N is the issue's
    version, which the edit moves on; a 409 naming the current one after, nothing applied.
    The official SDK's If-Match is held to the same version, with a 412."""
    key = "DEV-5"
    read = source.get(f"/issues/{key}").json()["version"]
    first = source.patch(f"/issues/{key}", params={"version": read}, json={"summary": "first"})
    assert first.status_code == 200 and first.json()["version"] == read + 1
    stale = source.patch(f"/issues/{key}", params={"version": read}, json={"summary": "stale"})
    assert stale.status_code == 409
    assert stale.json()["errors"] == {"version": str(read + 1)}
    header = source.patch(f"/issues/{key}", headers={"If-Match": f'"{read}"'}, json={"tags": []})
    assert header.status_code == 412
    assert source.get(f"/issues/{key}").json()["summary"] == "first"
