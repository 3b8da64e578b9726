"""Global fields, field categories and queue-local fields: list, get, create, edit.

A field is created with ``id`` (its key), ``name`` (``{en, ru}`` or a string), ``category``
(a category id) and ``type`` (the service's fully qualified type name); an
``optionsProvider`` ``{type: FixedListOptionsProvider, values: [...]}`` makes a drop-down.
Global fields and categories are locked by version; local fields are not.
"""

from __future__ import annotations

import re
import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from haul.sandbox.tracker.api.checks import Checks
from haul.sandbox.tracker.api.collection import Collection
from haul.sandbox.tracker.api.context import Call, json_object, open_call
from haul.sandbox.tracker.api.errors import ApiError
from haul.sandbox.tracker.api.locking import check_version
from haul.sandbox.tracker.structure import render_structure as shapes
from haul.sandbox.tracker.structure.routes_structure import queue_of_path
from haul.sandbox.tracker.structure.structure import KINDS_BY_TYPE, Field, FieldCategory

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}")


FIELDS = Collection(
    "Field", "field_id", lambda org: org.structure.fields, shapes.field,
    numbered=False, echo_id=True, order=lambda f: (not f.system, f.order),
)  # fmt: skip
list_fields, get_field = FIELDS.list, FIELDS.get


async def create_field(request: Request) -> Response:
    """POST /fields: a global custom field; an id taken (system or custom) is a 409."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    key = _key(checks)
    field = _draft(call, checks, key or "")
    checks.done()
    structure = call.org.structure
    if field.id in structure.fields:
        raise ApiError(409, f"Field {field.id!r} already exists", errors={"id": field.id})
    field.order = field.order or len(structure.fields) + 1
    structure.fields[field.id] = field
    return JSONResponse(shapes.field(call.view, field))  # the live reply is a 200


async def patch_field(request: Request) -> Response:
    call = open_call(request, admin=True)
    found = FIELDS.lookup(call, request)
    if found.system:
        raise ApiError(403, f"System field {found.id!r} cannot be changed")
    check_version(request, found.version)
    _edit(call, found, await json_object(request))
    found.version += 1
    return JSONResponse(shapes.field(call.view, found))


# -- categories ----------------------------------------------------------------------------


CATEGORIES = Collection(
    "Category", "category_id", lambda org: org.structure.categories, shapes.category,
    numbered=False, echo_id=True, order=lambda c: c.order, locked=True,
)  # fmt: skip
list_categories, get_category = CATEGORIES.list, CATEGORIES.get


async def create_category(request: Request) -> Response:
    """POST /fields/categories: name and order required, description optional."""
    call = open_call(request, admin=True)
    body = await json_object(request)
    checks = Checks(call.org, body)
    name_en, name_ru = _names(checks)
    order = _order(checks, required=True)
    description = checks.text("description") or ""
    checks.done()
    created = FieldCategory(secrets.token_hex(12), name_en, name_ru, description, order or 0)
    call.org.structure.categories[created.id] = created
    return JSONResponse(shapes.category(call.view, created), status_code=201)


async def patch_category(request: Request) -> Response:
    call, found = CATEGORIES.open_edit(request)
    body = await json_object(request)
    checks = Checks(call.org, body)
    names = _names(checks) if "name" in body else (found.name_en, found.name_ru)
    order = _order(checks, required=False)
    description = checks.text("description")
    checks.done()
    found.name_en, found.name_ru = names
    found.order = order if order is not None else found.order
    found.description = description if description is not None else found.description
    found.version += 1
    return JSONResponse(shapes.category(call.view, found))


# -- local fields --------------------------------------------------------------------------


async def list_local_fields(request: Request) -> Response:
    call = open_call(request)
    queue = queue_of_path(call, request)
    items = call.org.structure.local_fields_of(queue.key)
    return JSONResponse([shapes.field(call.view, f) for f in items])


def _local(call: Call, request: Request) -> Field:
    queue = queue_of_path(call, request)
    wanted = request.path_params["field_key"]
    found = next(
        (f for f in call.org.structure.local_fields_of(queue.key) if wanted in (f.key, f.id)),
        None,
    )
    if found is None:
        raise ApiError(404, "Field does not exist.", errors={"field": wanted})
    return found


async def get_local_field(request: Request) -> Response:
    call = open_call(request)
    return JSONResponse(shapes.field(call.view, _local(call, request)))


async def get_local_field_by_id(request: Request) -> Response:
    """GET /localFields/{id}: a local field by its full id, whatever its queue."""
    call = open_call(request)
    wanted = request.path_params["field_id"]
    found = call.org.structure.local_fields.get(wanted)
    if found is None:
        raise ApiError(404, "Field does not exist.", errors={"field": wanted})
    return JSONResponse(shapes.field(call.view, found))


async def create_local_field(request: Request) -> Response:
    """POST /queues/{id}/localFields: a field of that queue only, its id ``<hex>--<key>``."""
    call = open_call(request, admin=True)
    queue = queue_of_path(call, request)
    body = await json_object(request)
    checks = Checks(call.org, body)
    key = _key(checks)
    field = _draft(call, checks, f"{secrets.token_hex(12)}--{key}")
    checks.done()
    structure = call.org.structure
    if any(f.key == key for f in structure.local_fields_of(queue.key)):
        raise ApiError(
            409, f"Field {key!r} already exists in {queue.key}", errors={"id": key or ""}
        )
    field.key, field.queue = key or "", queue.key
    field.order = field.order or len(structure.local_fields_of(queue.key)) + 1
    structure.local_fields[field.id] = field
    return JSONResponse(shapes.field(call.view, field), status_code=201)


async def patch_local_field(request: Request) -> Response:
    """PATCH /queues/{id}/localFields/{key}: no version lock."""
    call = open_call(request, admin=True)
    found = _local(call, request)
    _edit(call, found, await json_object(request))
    return JSONResponse(shapes.field(call.view, found))


# -- bodies --------------------------------------------------------------------------------


def _key(checks: Checks) -> str | None:
    key = checks.text("id", required=True, limit=100)
    if key is not None and not _KEY.fullmatch(key):
        checks.fail("id", "Must be latin letters, digits and underscores, starting with a letter")
    return key


def _draft(call: Call, checks: Checks, field_id: str) -> Field:
    name_en, name_ru = _names(checks)
    kind = KINDS_BY_TYPE.get(str(checks.body.get("type")))
    if kind is None:
        checks.fail("type", "Must be a field type such as " + next(iter(KINDS_BY_TYPE)))
    category = checks.body.get("category")
    if category not in call.org.structure.categories:
        checks.fail("category", f"Category {category!r} does not exist")
    field = Field(field_id, field_id, name_en, name_ru, str(category), kind or "", 0)
    field.description = checks.text("description") or ""
    field.options = _options(checks) or ()
    field.readonly = bool(checks.body.get("readonly", False))
    field.order = _order(checks, required=False) or 0
    return field


def _edit(call: Call, found: Field, body: dict) -> None:
    checks = Checks(call.org, body)
    names = _names(checks) if "name" in body else (found.name_en, found.name_ru)
    description = checks.text("description")
    options = _options(checks)
    order = _order(checks, required=False)
    category = body.get("category")
    if category is not None and category not in call.org.structure.categories:
        checks.fail("category", f"Category {category!r} does not exist")
    checks.done()
    found.name_en, found.name_ru = names
    found.description = description if description is not None else found.description
    found.options = options if options is not None else found.options
    found.order = order if order is not None else found.order
    found.category = category or found.category
    if isinstance(body.get("readonly"), bool):
        found.readonly = body["readonly"]


def _names(checks: Checks) -> tuple[str, str]:
    value = checks.body.get("name")
    if isinstance(value, str) and value.strip():
        return value, value
    if isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("en", "ru")):
        return value["en"], value["ru"]
    checks.fail("name", "Required: a string or {en, ru}")
    return "", ""


def _options(checks: Checks) -> tuple[str, ...] | None:
    provider = checks.body.get("optionsProvider")
    if provider is None:
        return None
    values = provider.get("values") if isinstance(provider, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        checks.fail("optionsProvider", "Must be {type: FixedListOptionsProvider, values: [...]}")
        return None
    return tuple(values)


def _order(checks: Checks, *, required: bool) -> int | None:
    value = checks.body.get("order")
    if value is None:
        if required:
            checks.fail("order", "Required: an integer weight")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        checks.fail("order", "Must be an integer")
        return None
    return value
