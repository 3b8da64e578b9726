"""A local stand-in for the tracker (later also the wiki and forms) on loopback.

Start one with :func:`sandbox.server.start_sandbox` (tests, benchmarks) or ``haul sandbox
serve`` / ``python -m haul.sandbox`` (a rehearsal).  Nothing in ``connectors``, ``state`` or
``pipelines`` imports this package, and it imports none of them.

Layout: ``server`` (threads, ports, the JSON line), ``faults`` (fault spec, request counting,
connection drops), ``timefmt`` (wire times), and ``tracker/``: ``model`` (state), ``catalog``
(shared vocabulary), ``generate`` + ``records`` + ``text`` + ``blobs`` (deterministic orgs),
``query`` + ``scroll`` + ``paging`` (search), ``importing`` + ``editing`` + ``checks``
(writes), ``render`` (JSON shapes), ``routes_*`` + ``app`` (HTTP).

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
  the source instead of mapped by key is always a 422 in the target.
"""
