"""A local stand-in for the tracker, the wiki and forms on loopback.

Start one with :func:`sandbox.server.start_sandbox` (tests, benchmarks) or ``haul sandbox
serve`` / ``python -m haul.sandbox`` (a rehearsal).  Of haul's own modules only the CLI's
``demo`` and ``sandbox`` commands import this package (besides tests and benchmarks), and it
imports none of them: it is the other side of the wire.

Layout: ``server`` (threads, ports, the JSON line), ``info`` (that line asked over HTTP:
``GET /_sandbox/info``), ``faults`` (fault spec, request counting,
connection drops), ``timefmt`` (wire times), and what the three services share: ``people``
(the persons every organisation has, and the two accounts the tokens act as), ``world`` (the
organisations one process serves, the tokens that open them, who a request's credentials
name), ``groups`` (each org's groups); then one folder per service: ``wiki/`` (pages, access,
attachments and upload sessions, grids, comments), ``forms/`` (surveys, answers, files,
exports) and ``tracker/`` (cut as the tracker's load is: see its package docstring).

Behaviour the live service leaves open, as chosen here:
- a missing or unknown organisation header is 401, like a bad token;
- every scroll reply names the scroll id of the NEXT page; repeating a request repeats its
  page; a session lives until its TTL lapses or ``_clear`` (not only until its last page);
  an expired or unknown scroll id is 404;
- plain search and unsorted scroll list issues in creation order;
- a bare date in a query compares by whole days (``Updated: <= "2024-01-31"`` includes it);
- a worklog import's createdAt must lie in the issue's window, like comments and files;
- adding checklist items is an edit: it bumps the issue's updatedAt (imports never do);
- dictionary ids, queue ids and uids of the two orgs never overlap, so an id copied from
  the source instead of mapped by key is always a 422 in the target;
- a queue-local field's value is keyed by the field's id ``<hex>--<key>``; ``_import`` also
  takes the bare key; a key in ``_import`` that names no field is a 422 (system fields such
  as ``aliases`` are accepted and ignored);
- ``If-Match`` on board columns is optional; a stale one is 412, a stale ``?version=`` 409;
- a page of the wiki the caller may not read is 403 ``FORBIDDEN`` for it and everything on it.
"""
