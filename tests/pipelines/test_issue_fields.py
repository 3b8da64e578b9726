"""Every field of every issue, and the organisation objects they point to, reach the target.

After `haul run` of the sandbox's tiny org (queues keep their keys), each issue read back
through the tracker's official SDK in both orgs shows the same values: components, versions
and sprints by name, custom fields (global and queue-local) by key, planning dates, estimates,
story points and people; the components, versions, boards with their columns, sprints and
fields haul found or made read the same by name. `haul verify` compares those fields too, and
sees one custom field value changed in the target by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import yandex_tracker_client as sdk  # a dev dependency, not our own module

from haul.pipelines.commands.run import run_all
from haul.pipelines.commands.verify import verify
from haul.pipelines.config import load_config
from haul.pipelines.registry import services as all_services
from haul.pipelines.sync.references import without_file_ids
from tests.helpers.haul_fixtures import environ, source_queues, write_config
from tests.helpers.org_snapshot import WEB_HOST

# what an import cannot keep or a migration changes by design: ids, links to the org, the
# count of edits, the time checklists were added at, and what is computed from other records
NOT_COMPARED = {
    "self", "id", "version", "queue", "unique", "updatedAt", "updatedBy", "favorite", "votes",
    "lastCommentUpdatedAt", "statusStartTime", "previousStatus", "checklistItems",
    "commentWithoutExternalMessageCount", "commentWithExternalMessageCount", "attachments",
}  # fmt: skip


def sdk_client(info: dict[str, Any], org: str) -> Any:
    host = info["tracker"].rsplit("/v3", 1)[0]
    return sdk.TrackerClient(
        token=info["tokens"]["admin"], org_id=info["orgs"][org], base_url=host, retries=1
    )


def readable(value: Any) -> Any:
    """A value as a person compares it: a reference by its key or name, lists sorted."""
    if isinstance(value, list):
        return sorted((readable(item) for item in value), key=str)
    reference = getattr(value, "_value", value)  # the SDK's Reference keeps the JSON it got
    if isinstance(reference, dict):
        return reference.get("key") or reference.get("display") or reference.get("id")
    return value


def issue_view(issue: dict[str, Any]) -> dict[str, Any]:
    """An issue's fields by key (a local field by its bare key), references readable."""
    return {
        key.rpartition("--")[2]: as_compared(key, value)
        for key, value in issue.items()
        if key not in NOT_COMPARED
    }


def as_compared(key: str, value: Any) -> Any:
    """A field as both orgs should show it: a description's files by their place (their ids
    are each org's own) and its web links by service (each org has its own web host)."""
    if key == "description" and isinstance(value, str):
        return WEB_HOST.sub(lambda m: f"https://{m.group(1)}-web", without_file_ids(value))
    return readable(value)


def structure_view(client: Any, queues: list[str]) -> dict[str, Any]:
    """The structure the issues point to, by name."""
    boards = list(client.boards.get_all())
    return {
        "components": sorted((c.name, c.queue.key) for c in client.components.get_all()),
        "versions": sorted((v.name, v.queue.key) for v in client.versions.get_all()),
        "boards": sorted((b.name, tuple(c.name for c in b.columns.get_all())) for b in boards),
        "sprints": sorted((s.name, s.startDate) for b in boards for s in b.sprints.get_all()),
        "fields": sorted(f.id for f in client.fields.get_all() if f.type == "global"),
        "local_fields": sorted((q, f.key) for q in queues for f in client.queues[q].local_fields),
    }


async def test_every_field_of_every_issue_reads_the_same(sandbox: Any, tmp_path: Path) -> None:
    """The official SDK reads every issue, and the structure it points to, the same in both
    orgs; verify passes, then names the issue whose custom field was changed by hand."""
    info = sandbox.info
    queues = source_queues(info)
    config = load_config(write_config(tmp_path, info, queues=queues, mapping={}))
    summary = await run_all(config, all_services(), environ=environ(info))
    assert summary.failed == 0
    source, target = sdk_client(info, "source"), sdk_client(info, "target")
    keys = [issue.key for q in queues for issue in source.issues.find(query=f"Queue: {q}")]
    carried, in_sprints = 0, set()
    for key in keys:
        mine, theirs = source.issues[key], target.issues[key]
        before, after = issue_view(mine._value), issue_view(theirs._value)
        assert after == before, key
        carried += len({"components", "sprint", "reviewer", "storyPoints"} & set(before))
        in_sprints |= set(before.get("sprint") or [])
    assert carried > 10  # the seeded org does carry these fields
    wanted = structure_view(source, queues)
    found = structure_view(target, queues)
    # every sprint of the boards in scope is carried (with its dates), not only those the
    # issues are in
    assert in_sprints and len(wanted["sprints"]) > len(in_sprints)
    for kind in ("components", "versions", "boards", "sprints", "fields", "local_fields"):
        assert set(wanted[kind]) <= set(found[kind]), kind

    assert (await verify(config, all_services(), environ=environ(info))).ok
    changed = next(k for k in keys if source.issues[k]._value.get("customerName"))
    headers = {
        "Authorization": f"OAuth {info['tokens']['admin']}",
        "X-Org-ID": info["orgs"]["target"],
    }
    async with httpx.AsyncClient() as plain:
        reply = await plain.patch(
            f"{info['tracker']}/issues/{changed}", headers=headers, json={"customerName": "edited"}
        )
    assert reply.status_code == 200, reply.text
    result = await verify(config, all_services(), environ=environ(info), entities=["issue"])
    assert [(d.source_id, d.field, d.target) for d in result.differences] == [
        (changed, "field:customerName", "edited")
    ]


async def test_a_migration_into_an_empty_org_makes_what_the_issues_need(
    sandbox: Any, tmp_path: Path
) -> None:
    """Into an org that has none of the source's queues, statuses or fields, the default
    config makes them (and the components, versions, boards and sprints) first, then every
    issue loads; a second run makes nothing more."""
    info = sandbox.info
    queues = source_queues(info)
    path = write_config(tmp_path, info, queues=queues, mapping={})
    text = path.read_text(encoding="utf-8")
    target_org = f'org_id = "{info["orgs"]["target"]}"'
    assert target_org in text
    path.write_text(text.replace(target_org, f'org_id = "{info["orgs"]["empty"]}"'), "utf-8")
    config = load_config(path)
    summary = await run_all(config, all_services(), environ=environ(info))
    assert summary.failed == 0
    loaded = {row.entity: row.loaded for row in summary.counts}
    assert loaded["queue"] == len(queues) and loaded["issue"] > 0 and loaded["status"] > 0
    empty = sdk_client(
        {**info, "orgs": {**info["orgs"], "target": info["orgs"]["empty"]}}, "target"
    )
    assert set(queues) <= {q.key for q in empty.queues.get_all()}
    again = await run_all(config, all_services(), environ=environ(info))
    assert again.details["loaded"] == 0


async def test_the_export_has_the_structure_and_a_typed_column_per_custom_field(
    sandbox: Any, tmp_path: Path
) -> None:
    """Components, versions, boards, columns, sprints and fields have tables of their own, and
    `issue_custom_fields` holds each custom field's values in a column of its type."""
    import pyarrow.parquet as pq

    from haul.pipelines.commands.run import extract
    from haul.pipelines.export.command import ExportRequest, run_export
    from haul.pipelines.registry import services

    info = sandbox.info
    config = load_config(write_config(tmp_path, info, queues=source_queues(info), mapping={}))
    await extract(config, all_services(), environ=environ(info))
    result = run_export(
        config, ExportRequest(out=tmp_path / "exports", format="parquet"), services=services()
    )
    rows = {file.table: file.rows for file in result.files}
    for table in ("components", "versions", "boards", "board_columns", "sprints", "fields"):
        assert rows.get(table, 0) > 0, table
    custom = pq.read_table(result.folder / "issue_custom_fields.parquet")
    types = {field.name: str(field.type) for field in custom.schema}
    assert types["ticketCount"] == "int64" and types["businessValue"] == "double"
    assert types["reviewDate"] == "date32[day]" and types["reviewer"] == "string"
    assert "environment" in types  # a queue-local field, by its bare key
    values = custom.to_pydict()
    source = sdk_client(info, "source")
    for key, count in zip(values["issue_key"], values["ticketCount"], strict=True):
        assert count == source.issues[key]._value.get("ticketCount"), key


async def test_a_value_the_target_field_cannot_hold_is_counted_and_its_issue_loads(
    sandbox: Any, tmp_path: Path
) -> None:
    """`[mapping] fields` sends the integer `ticketCount` into the target's string field
    `customerName`: every issue still loads, each value left out is counted per field and
    reason, `haul status` says so, and verify sees the loss."""
    from haul.pipelines.commands.run import open_store
    from haul.pipelines.commands.status import gather_status
    from haul.pipelines.registry import services

    info = sandbox.info
    extra = '\n[mapping.fields]\nticketCount = "customerName"\n'
    path = write_config(tmp_path, info, queues=source_queues(info), mapping={})
    text = path.read_text(encoding="utf-8").replace("[staging]", extra.strip() + "\n\n[staging]")
    path.write_text(text, encoding="utf-8")
    config = load_config(path)
    summary = await run_all(config, all_services(), environ=environ(info))
    assert summary.failed == 0
    reason = "field:ticketCount: the target's field of that key is a StringFieldType"
    dropped = summary.details["not_carried"]
    assert [why for why in dropped if why.startswith("field:")] == [reason] and dropped[reason] > 0
    with open_store(config.staging_path) as store:
        assert gather_status(store, services()).not_carried == dropped
        holding = [r for r in store.iter_records("issue") if r.raw.get("ticketCount") is not None]
    assert dropped[reason] == len(holding)  # each value once (a sync's base counts none)
    result = await verify(config, all_services(), environ=environ(info), entities=["issue"])
    assert {d.field for d in result.differences} == {"field:customerName"}
