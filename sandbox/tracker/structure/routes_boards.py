"""Boards, their columns and sprints.

A board is created at ``/boards/`` or ``/liveBoards/``; a column change bumps its board's
version, and ``If-Match`` (the board's version) guards column writes as it guards board edits.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.timefmt import now_ms
from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import Collection, numeric
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.search.paging import relative_page
from haul.sandbox.tracker.structure import render_structure as shapes
from haul.sandbox.tracker.structure.routes_structure import find_queue
from haul.sandbox.tracker.structure.structure import Board, Column, Sprint

SPRINT_STATUSES = ("draft", "in_progress", "released")


BOARDS = Collection(
    "Board", "board_id", lambda org: org.structure.boards, shapes.board, locked=True
)
list_boards, get_board = BOARDS.list, BOARDS.get


async def paginate_boards(request: Request) -> Response:
    """GET /boards/_paginate?id=&perPage=: boards after the id cursor, a scheme-less Link."""
    call = open_call(request)
    page = relative_page(request, list(call.org.structure.boards.values()), lambda b: b.id)
    return JSONResponse([shapes.board(call.view, b) for b in page.items], headers=page.headers)


async def create_board(request: Request) -> Response:
    """POST /boards/ or /liveBoards/: name required; a queue through defaultQueue or filter."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", required=True, limit=255)
    queue_ref = body.get("defaultQueue") or (body.get("filter") or {}).get("queue")
    queue = find_queue(call.org, queue_ref) if queue_ref is not None else None
    if queue_ref is not None and queue is None:
        checks.fail("defaultQueue", f"Queue {queue_ref!r} does not exist")
    checks.done()
    structure = call.org.structure
    now = now_ms()
    created = Board(
        structure.take("board"),
        name or "",
        queue.key if queue else None,
        call.user.uid,
        now,
        now,
        use_ranking=bool(body.get("useRanking", False)),
    )
    structure.boards[created.id] = created
    return JSONResponse(shapes.board(call.view, created), status_code=201)


async def patch_board(request: Request) -> Response:
    call, found = BOARDS.open_edit(request)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", limit=255)
    checks.done()
    found.name = name if name is not None else found.name
    _touch(found)
    return JSONResponse(shapes.board(call.view, found))


async def delete_board(request: Request) -> Response:
    """DELETE /boards/{id}: 200 with no body; its sprints go with it."""
    call = open_call(request, admin=True)
    structure = call.org.structure
    found = BOARDS.lookup(call, request)
    del structure.boards[found.id]
    for sprint_id in [s.id for s in structure.sprints.values() if s.board == found.id]:
        del structure.sprints[sprint_id]
    return Response(status_code=200)


def _touch(board: Board) -> None:
    board.version += 1
    board.updated_at = max(now_ms(), board.updated_at)


# -- columns -------------------------------------------------------------------------------


async def list_columns(request: Request) -> Response:
    call = open_call(request)
    found = BOARDS.lookup(call, request)
    return JSONResponse([shapes.column(call.view, found, c) for c in found.columns])


def _column(call: Call, request: Request) -> tuple[Board, Column]:
    owner = BOARDS.lookup(call, request)
    wanted = numeric(request, "column_id")
    found = next((c for c in owner.columns if c.id == wanted), None)
    if found is None:
        raise ApiError(404, "Column does not exist.", errors={"column": str(wanted)})
    return owner, found


async def get_column(request: Request) -> Response:
    call = open_call(request)
    owner, found = _column(call, request)
    return JSONResponse(shapes.column(call.view, owner, found))


async def create_column(request: Request) -> Response:
    """POST /boards/{id}/columns: name and statuses (status keys) required, limit optional."""
    call = open_call(request, admin=True)
    owner = BOARDS.lookup(call, request)
    check_version(request, owner.version)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", required=True, limit=255)
    statuses = _statuses(call, checks, required=True)
    limit = _limit(checks)
    checks.done()
    created = Column(call.org.structure.take("column"), name or "", statuses, limit)
    owner.columns.append(created)
    _touch(owner)
    return JSONResponse(shapes.column(call.view, owner, created), status_code=201)


async def patch_column(request: Request) -> Response:
    call = open_call(request, admin=True)
    owner, found = _column(call, request)
    check_version(request, owner.version)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", limit=255)
    statuses = _statuses(call, checks, required=False)
    limit = _limit(checks)
    checks.done()
    found.name = name if name is not None else found.name
    found.statuses = statuses or found.statuses
    found.limit = limit if "limit" in body else found.limit
    _touch(owner)
    return JSONResponse(shapes.column(call.view, owner, found))


async def delete_column(request: Request) -> Response:
    call = open_call(request, admin=True)
    owner, found = _column(call, request)
    check_version(request, owner.version)
    owner.columns.remove(found)
    _touch(owner)
    return Response(status_code=200)


def _statuses(call: Call, checks: Checks, *, required: bool) -> list[str]:
    values = checks.body.get("statuses")
    if values is None:
        if required:
            checks.fail("statuses", "Required: a list of status keys")
        return []
    if not isinstance(values, list) or not values:
        checks.fail("statuses", "Must be a non-empty list of status keys")
        return []
    found = [call.org.statuses.lookup(v.get("key") if isinstance(v, dict) else v) for v in values]
    if any(entry is None for entry in found):
        checks.fail("statuses", "Every entry must be a status of this organization")
        return []
    return [entry.key for entry in found if entry is not None]


def _limit(checks: Checks) -> int | None:
    value = checks.body.get("limit")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        checks.fail("limit", "Must be a non-negative integer")
        return None
    return value


# -- sprints -------------------------------------------------------------------------------


async def list_board_sprints(request: Request) -> Response:
    call = open_call(request)
    owner = BOARDS.lookup(call, request)
    items = [s for s in call.org.structure.sprints.values() if s.board == owner.id]
    return JSONResponse([shapes.sprint(call.view, s) for s in items])


async def get_sprint(request: Request) -> Response:
    call = open_call(request)
    found = call.org.structure.sprints.get(numeric(request, "sprint_id"))
    if found is None:
        raise ApiError(404, "Sprint does not exist.", errors={"sprint": "not found"})
    return JSONResponse(shapes.sprint(call.view, found))


async def create_sprint(request: Request) -> Response:
    """POST /sprints: name, board ({id} or an id), startDate and endDate required."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name = checks.text("name", required=True, limit=255)
    board_ref = body.get("board")
    board_ref = board_ref.get("id") if isinstance(board_ref, dict) else board_ref
    owner = call.org.structure.boards.get(int(str(board_ref))) if str(board_ref).isdigit() else None
    if owner is None:
        checks.fail("board", "Required: the id of a board of this organization")
    start, end = (_required_date(checks, n) for n in ("startDate", "endDate"))
    if start and end and end < start:
        checks.fail("endDate", "Must not lie before startDate")
    status = body.get("status", "draft")
    if status not in SPRINT_STATUSES:
        checks.fail("status", f"Must be one of: {', '.join(SPRINT_STATUSES)}")
    checks.done()
    assert owner is not None and start is not None and end is not None
    structure = call.org.structure
    created = Sprint(
        structure.take("sprint"), owner.id, name or "", status, start, end, call.user.uid, now_ms()
    )
    structure.sprints[created.id] = created
    return JSONResponse(shapes.sprint(call.view, created), status_code=201)


def _required_date(checks: Checks, name: str) -> str | None:
    value = checks.body.get(name)
    if not isinstance(value, str) or len(value) < 10 or value[4] != "-" or value[7] != "-":
        checks.fail(name, "Required: a date like 2024-01-31")
        return None
    return value[:10]
