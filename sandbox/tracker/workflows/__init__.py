"""A queue's workflows and issue-type configuration: the org's workflows and each queue's
configuration, seeded on first use (:mod:`workflows`), served at ``/workflows`` and
``/queues/{queue}/workflows`` (:mod:`routes_workflows`); a queue's settings are edited in
``structure/`` (``routes_queues``). A queue's triggers and macros live here too
(:mod:`queue_rules`: issues fire them, so they sit before ``issues/``; their routes are in
``planning/routes_triggers``)."""
