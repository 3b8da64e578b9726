"""The tracker sandbox, cut along the layers haul loads in (DESIGN.md, "Exactly-once loading").

At the top: ``app`` (every route in one table, the error envelope, the fault middleware and
the ``/_sandbox/*`` controls), ``model`` (an organisation's state: dictionaries, queues,
issues and their records), ``catalog`` (the vocabulary every generated organisation shares),
``system_fields`` (the fields every organisation comes with), ``blobs`` (attachment bytes),
``routes_planning`` (the planning layer's route table) and ``routes_edits`` (sandbox-only
damage for verify to find). Then one folder per part, importing only the folders before it:

- ``api/``: what every route shares (the caller, errors, checks, the version lock, references);
- ``search/``: which issues a search selects, scroll sessions, paging headers;
- ``workflows/``: the org's workflows and each queue's issue-type configuration;
- ``structure/``: the organisation as configured (dictionaries, queues and their settings and
  permissions, fields, components, versions, boards, sprints);
- ``issues/``: issues and their records: reads, a person's edits, the admin ``_import`` family;
- ``planning/``: saved filters, dashboards, remote links, autoactions, triggers and macros
  (and the planning layer's state);
- ``entities/``: projects, portfolios, goals and what hangs off them;
- ``seed/``: the deterministic source, target and empty organisations.
"""
