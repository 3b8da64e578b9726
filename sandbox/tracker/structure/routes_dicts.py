"""Organisation dictionaries, queues and users."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.people import ADMIN_LOGIN, USER_LOGIN
from haul.sandbox.tracker.api.context import open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.search.paging import page_of
from haul.sandbox.tracker.structure import render_structure as render


def _dictionary_endpoint(path: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        call = open_call(request)
        dictionary = call.view.dictionary(path)
        return JSONResponse([render.entry(call.view, path, e) for e in dictionary.entries])

    endpoint.__name__ = f"list_{path}"
    return endpoint


list_statuses = _dictionary_endpoint("statuses")
list_issue_types = _dictionary_endpoint("issuetypes")
list_priorities = _dictionary_endpoint("priorities")
list_resolutions = _dictionary_endpoint("resolutions")


async def list_link_types(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse(
        [
            {
                "self": f"{call.view.base}/linktypes/{kind.id}",
                "id": kind.id,
                "inward": kind.inward,
                "outward": kind.outward,
            }
            for kind in call.org.link_types.values()
        ]
    )


async def list_queues(request: Request) -> Response:
    call = open_call(request)
    page = page_of(request, list(call.org.queues.values()))
    return JSONResponse([render.queue(call.view, q) for q in page.items], headers=page.headers)


async def get_queue(request: Request) -> Response:
    """A queue with its issue types, workflows and resolutions; ``expand`` (``components``,
    ``versions`` or ``all``) adds refs to its components and versions."""
    call = open_call(request)
    wanted = request.path_params["queue"]
    queue = call.org.queues.get(wanted) or next(
        (q for q in call.org.queues.values() if str(q.id) == wanted), None
    )
    if queue is None:
        raise ApiError(404, "Queue does not exist.", errors={"queue": wanted})
    body = render.queue(call.view, queue, full=True)
    expand = set(request.query_params.get("expand", "").split(","))
    structure = call.org.structure
    for name, objects in (("components", structure.components), ("versions", structure.versions)):
        if expand & {name, "all"}:
            body[name] = [
                {"self": f"{call.view.base}/{name}/{o.id}", "id": str(o.id), "display": o.name}
                for o in objects.values()
                if o.queue == queue.key
            ]
    return JSONResponse(body)


async def list_users(request: Request) -> Response:
    """Users by ascending uid, page by page, as ``{"users": [...], "hasNext": bool}``."""
    call = open_call(request)
    people = sorted(call.org.users.values(), key=lambda user: user.uid)
    page = page_of(request, people)
    has_next = 'rel="next"' in page.headers["Link"]
    body = {"users": [render.user(call.view, u) for u in page.items], "hasNext": has_next}
    return JSONResponse(body, headers=page.headers)


async def remove_user(request: Request) -> Response:
    """DELETE /_sandbox/users/{login} (admin, with the org header): the person leaves this
    organisation, as one who left the company; what they made stays as it is."""
    call = open_call(request, admin=True)
    login = request.path_params["login"]
    if login in (ADMIN_LOGIN, USER_LOGIN) or not call.org.remove_user(login):
        raise ApiError(404, "User does not exist.", errors={"user": login})
    return Response(status_code=200)


async def dismiss_user(request: Request) -> Response:
    """POST /_sandbox/users/{login}/dismissal (admin, with the org header): the person leaves
    this organisation and stays listed, ``dismissed``, as the real service keeps one who left;
    the wiki refuses to give them page access (400 VALIDATION_ERROR)."""
    call = open_call(request, admin=True)
    login = request.path_params["login"]
    if login in (ADMIN_LOGIN, USER_LOGIN) or not call.org.dismiss_user(login):
        raise ApiError(404, "User does not exist.", errors={"user": login})
    return Response(status_code=200)


async def get_user(request: Request) -> Response:
    call = open_call(request)
    wanted = request.path_params["user"].removeprefix("login:")
    found = call.org.find_user(wanted)
    if found is None:
        raise ApiError(404, "User does not exist.", errors={"user": wanted})
    return JSONResponse(render.user(call.view, found))
