"""A collection of records in an organisation, served as list / get / create / edit / delete.

A route module describes its collection once, where the org keeps the records, the path
parameter of a record's id, the noun its errors use and how a record is shown, and takes
from it the endpoints whose behaviour is the common one::

    TRIGGERS = Collection("Trigger", "trigger_id", lambda org: rules_of(org).triggers,
                          trigger_shape, queue_of=queue_of_path, locked=True)
    list_triggers, get_trigger, delete_trigger = TRIGGERS.list, TRIGGERS.get, TRIGGERS.delete
    create_trigger = TRIGGERS.creator(_trigger_settings, _new_trigger)
    patch_trigger = TRIGGERS.editor(_trigger_settings)

What every such route answers, as the tracker does:

- list: the whole collection (the records of the path's queue, for a collection a queue
  owns) as a JSON array, in the org's order or by ``order``; no paging.
- a record not found, or one of another queue than the path's: 404 ``"<Noun> does not
  exist."`` with ``errors: {"<noun>": "not found"}`` (the id asked for, with ``echo_id``); an
  id that is not a number where ids are numbers: 404 ``"Not found"`` (:func:`numeric`).
- create: 201 with the record; edit: 200 with it; delete: 200 and no body. Writes need the
  admin token unless ``admin_writes`` is off.
- with ``locked``, an edit is under the version lock (``version`` or ``If-Match``,
  :mod:`locking`) and moves the record's version on.

Create and edit serve records a queue owns (a creator, those of the path's queue) and read
the body through a :class:`Settings` function: the attributes it sets (every one when
creating), or one 422 naming each wrong field (:mod:`checks`). A creation
takes its id only once the body is found good. A route whose behaviour is its own (a name
unique within a queue, a delete that takes other records with it) keeps its own handler and
uses :meth:`Collection.lookup`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.api.render_refs import View
from haul.sandbox.tracker.model import Org, Queue

T = TypeVar("T")
Endpoint = Callable[[Request], Awaitable[Response]]


class Settings(Protocol):
    """The attributes a body sets on a record of the queue (all of them when creating)."""

    def __call__(self, checks: Checks, queue: Queue, /, *, creating: bool) -> dict[str, object]:
        """Every attribute the body sets, by name; a wrong field is failed on ``checks`` (the
        caller answers the 422 once they are read)."""
        ...


def numeric(request: Request, name: str) -> int:
    """The path parameter ``name`` as a number; 404 ``"Not found"`` when it is none."""
    value = request.path_params[name]
    if not value.isdigit():
        raise ApiError(404, "Not found", errors={name: value})
    return int(value)


def _owner(record: Any) -> Any:
    """The queue a record belongs to (None for a record of the whole org)."""
    return getattr(record, "queue", None)


def _version(record: Any) -> int:
    """The version a locked record is at."""
    return int(record.version)


@dataclass(frozen=True)
class Collection(Generic[T]):
    """One kind of record of an org, and the endpoints that serve it (see the module)."""

    noun: str  # in errors: "Trigger"
    param: str  # the path parameter of a record's id: "trigger_id"
    records: Callable[[Org], dict[Any, T]]  # the org's records of this kind, by id
    render: Callable[[View, T], dict[str, Any]]
    queue_of: Callable[[Call, Request], Queue] | None = None  # records a queue owns
    locked: bool = False  # an edit is under the version lock
    admin_writes: bool = True  # create, edit and delete need the admin token
    numbered: bool = True  # ids are numbers (a path id that is no number is 404)
    echo_id: bool = False  # a miss names the id asked for rather than "not found"
    order: Callable[[T], Any] | None = None  # a list's sort key (None: the org's order)

    def lookup(self, call: Call, request: Request) -> T:
        """The record the path names, of the path's queue where a queue owns them; or 404."""
        queue = self.queue_of(call, request) if self.queue_of else None
        wanted = request.path_params[self.param]
        found = self.records(call.org).get(
            numeric(request, self.param) if self.numbered else wanted
        )
        if found is None or (queue is not None and _owner(found) != queue.key):
            detail = wanted if self.echo_id else "not found"
            raise ApiError(404, f"{self.noun} does not exist.", errors={self.noun.lower(): detail})
        return found

    def _listed(self, call: Call, request: Request) -> list[T]:
        if self.queue_of is None:
            items = list(self.records(call.org).values())
        else:
            queue = self.queue_of(call, request)
            items = [item for item in self.records(call.org).values() if _owner(item) == queue.key]
        return items if self.order is None else sorted(items, key=self.order)

    async def list(self, request: Request) -> Response:
        """GET the collection: every record (of the path's queue), no paging."""
        call = open_call(request)
        return JSONResponse([self.render(call.view, item) for item in self._listed(call, request)])

    async def get(self, request: Request) -> Response:
        """GET one record."""
        call = open_call(request)
        return JSONResponse(self.render(call.view, self.lookup(call, request)))

    async def delete(self, request: Request) -> Response:
        """DELETE one record: 200 with no body."""
        call = open_call(request, admin=self.admin_writes)
        del self.records(call.org)[self._id(self.lookup(call, request))]
        return Response(status_code=200)

    def creator(self, settings: Settings, new: Callable[[Org, Queue], T]) -> Endpoint:
        """POST to a queue's collection: ``settings`` read the body, ``new`` makes the record
        (taking its id) once they are good; 201 with the record."""
        queue_of = self._queue_owned()

        async def create(request: Request) -> Response:
            call = open_call(request, admin=self.admin_writes)
            queue = queue_of(call, request)
            checks = Checks(call.org, await json_object(request))
            changes = settings(checks, queue, creating=True)
            checks.done()
            made = new(call.org, queue)
            _apply(made, changes)
            self.records(call.org)[self._id(made)] = made
            return JSONResponse(self.render(call.view, made), status_code=201)

        return create

    def editor(
        self, settings: Settings, edited: Callable[[T], None] = lambda record: None
    ) -> Endpoint:
        """PATCH one record of a queue (its ``queue``, the settings' queue): what ``settings``
        read from the body is set (under the version lock where ``locked``), then ``edited``
        (a timestamp to move); 200 with the record."""

        async def edit(request: Request) -> Response:
            call, found = self.open_edit(request)
            queue = call.org.queues[_owner(found)]
            checks = Checks(call.org, await json_object(request))
            changes = settings(checks, queue, creating=False)
            checks.done()
            _apply(found, changes)
            if self.locked:
                _apply(found, {"version": _version(found) + 1})
            edited(found)
            return JSONResponse(self.render(call.view, found))

        return edit

    def open_edit(self, request: Request) -> tuple[Call, T]:
        """The caller of an edit (with the admin token where writes need it) and the record it
        names, under the version lock where ``locked`` (409/412 when stale)."""
        call = open_call(request, admin=self.admin_writes)
        found = self.lookup(call, request)
        if self.locked:
            check_version(request, _version(found))
        return call, found

    def _queue_owned(self) -> Callable[[Call, Request], Queue]:
        if self.queue_of is None:
            raise TypeError(f"{self.noun}: a creator serves the collection of the path's queue")
        return self.queue_of

    @staticmethod
    def _id(record: Any) -> Any:
        return record.id


def _apply(record: object, changes: dict[str, object]) -> None:
    for attribute, value in changes.items():
        setattr(record, attribute, value)
