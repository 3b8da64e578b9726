"""The organisation as configured: dictionaries, queues and users (:mod:`routes_dicts`,
:mod:`routes_setup`), a queue's settings edited (:mod:`routes_queues`), queue permissions
(:mod:`queue_access`),
fields and field categories (:mod:`routes_fields`), components and versions
(:mod:`routes_structure`), boards with columns and sprints (:mod:`routes_boards`); their
state in :mod:`structure`, their JSON shapes in :mod:`render_structure`."""
