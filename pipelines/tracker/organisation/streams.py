"""The organisation layer's extract streams: one org's dictionaries, queues and users, and the
structure the issues of the scoped queues point to (fields and their categories, the queues'
local fields, components and versions, boards with their columns and sprints), the org's
workflows and each scoped queue's configuration (issue types and permissions).

The target's dictionaries are listed by the same streams under the `target.` prefix
(`pipelines.tracker.target`). Each is a generic list stream (`pipelines.streams`): a listing
staged whole as one page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from haul.connectors.errors import NotFoundError
from haul.connectors.tracker import TrackerClient
from haul.pipelines.config import Config, ConfigError
from haul.pipelines.streams import Extractor, ListStream, RowsStream
from haul.pipelines.tracker.target import TrackerTarget, issues_staged
from haul.state.store import StagingStore

Fetch = Callable[[], Awaitable[list[dict[str, Any]]]]


def tracker_list(entity: str, fetch: Fetch, id_key: str = "id") -> ListStream:
    """A whole tracker listing staged as one page (its items without their id are the
    tracker's problem, named so)."""
    return ListStream(entity, fetch, id_key=id_key, source="the tracker")


def dictionary_streams(client: TrackerClient, prefix: str = "") -> list[ListStream]:
    """One org's dictionaries, queues and users (the target's under the `target.` prefix)."""

    async def queues() -> list[dict[str, Any]]:
        return [queue async for queue in client.iter_queues()]

    async def users() -> list[dict[str, Any]]:
        return [user async for user in client.iter_users()]

    return [
        tracker_list(prefix + "status", client.list_statuses),
        tracker_list(prefix + "issuetype", client.list_issue_types),
        tracker_list(prefix + "priority", client.list_priorities),
        tracker_list(prefix + "resolution", client.list_resolutions),
        tracker_list(prefix + "linktype", client.list_link_types),
        tracker_list(prefix + "queue", queues, id_key="key"),
        tracker_list(prefix + "user", users, id_key="uid"),
    ]


def structure_streams(
    client: TrackerClient, queues: Sequence[str]
) -> list[ListStream | RowsStream]:
    """The source org's structure the issues of `queues` point to: fields and their
    categories, the queues' local fields, components and versions, boards with their columns
    and sprints."""

    async def per_queue(
        listing: Callable[[str], Awaitable[list[dict[str, Any]]]],
    ) -> list[dict[str, Any]]:
        rows = []
        for queue in queues:
            try:
                listed = await listing(queue)
            except NotFoundError as exc:  # a typo in the config, not an empty queue: exit 2
                problem = f"{queue} is not a queue of the tracker source org ({exc.server_message})"
                raise ConfigError("scope.queues", problem) from exc
            for item in listed:
                source_id = f"{queue}/{item['key']}" if "key" in item else str(item["id"])
                rows.append({"source_id": source_id, "parent": queue, "raw": item})
        return rows

    async def columns() -> list[dict[str, Any]]:
        rows = []
        for board in await client.list_boards():
            for position, column in enumerate(await client.list_board_columns(board["id"])):
                raw = {**column, "position": position}
                source_id = f"{board['id']}/{column['id']}"
                rows.append({"source_id": source_id, "parent": str(board["id"]), "raw": raw})
        return rows

    async def sprints() -> list[dict[str, Any]]:
        return [
            {"source_id": str(sprint["id"]), "parent": str(board["id"]), "raw": sprint}
            for board in await client.list_boards()
            for sprint in await client.list_board_sprints(board["id"])
        ]

    async def workflows() -> list[dict[str, Any]]:
        try:
            return await client.list_workflows()
        except NotFoundError:  # a service that serves no workflows: the queues' keep theirs
            return []

    return [
        tracker_list("workflow", workflows),
        RowsStream("queue_config", lambda: queue_configs(client, queues)),
        tracker_list("field_category", client.list_field_categories),
        tracker_list("field", client.list_fields),
        RowsStream("local_field", lambda: per_queue(client.list_local_fields)),
        RowsStream("component", lambda: per_queue(client.list_queue_components)),
        RowsStream("version", lambda: per_queue(client.list_queue_versions)),
        tracker_list("board", client.list_boards),
        RowsStream("board_column", columns),
        RowsStream("sprint", sprints),
    ]


async def queue_configs(client: TrackerClient, queues: Sequence[str]) -> list[dict[str, Any]]:
    """Per scoped queue, one record of its configuration: its issue-type configuration (each
    type with its workflow and resolutions) and its permission scheme (None where the service
    serves none)."""
    rows = []
    for queue in queues:
        try:
            found = await client.get_queue(queue)
        except NotFoundError as exc:  # a typo in the config, not an empty queue: exit 2
            problem = f"{queue} is not a queue of the tracker source org ({exc.server_message})"
            raise ConfigError("scope.queues", problem) from exc
        try:
            scheme: dict[str, Any] | None = await client.get_queue_scheme(queue)
        except NotFoundError:
            scheme = None
        raw = {"key": queue, "issueTypesConfig": found.get("issueTypesConfig") or [],
               "permissions": scheme}  # fmt: skip
        rows.append({"source_id": queue, "parent": queue, "raw": raw})
    return rows


async def stage_target(client: TrackerClient, store: StagingStore) -> None:
    """Stage the target org's dictionaries, queues, users and fields under `target.`."""
    fields = tracker_list("target.field", client.list_fields)

    async def myself() -> list[dict[str, Any]]:
        return [await client.myself()]

    me = tracker_list("target.myself", myself, id_key="login")
    await Extractor(store, [*dictionary_streams(client, prefix="target."), fields, me]).run()


async def checked_target(
    config: Config, client: TrackerClient, store: StagingStore | None, side: str
) -> TrackerTarget | None:
    """The target context `haul check` compares the staged records with (its dictionaries
    staged once for every check): on the target side, once issues are staged or the scope
    names entities; else None."""
    if side != "target" or store is None:
        return None
    if not issues_staged(config, store) and not config.scope.entity_types:
        return None
    await stage_target(client, store)
    return await TrackerTarget.of(config, client, store)
