"""The planning layer around issues: saved filters and dashboards (:mod:`routes_filters`),
remote links and the applications they point into (:mod:`routes_remotelinks`), queue
autoactions with their run logs (:mod:`routes_autoactions`); their JSON shapes in
:mod:`render_planning`. A queue's triggers and macros: their routes and shapes in
:mod:`routes_triggers`, their state, seed and firings in ``workflows.queue_rules``.
:mod:`planning` holds the whole layer's in-memory state, entities' included (:mod:`sandbox.tracker.entities` serves those)."""
