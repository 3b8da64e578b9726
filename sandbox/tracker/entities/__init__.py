"""Entities (projects, portfolios, goals) and what hangs off them: write rules
(:mod:`entities`), permissions (:mod:`entity_access`), history and comments
(:mod:`entity_history`), links (:mod:`entity_links`), checklist, attachments and uploads
(:mod:`routes_entity_records`), their routes (:mod:`routes_entities`) and JSON shapes
(:mod:`render_entities`); and ``GET /groups``, the groups entity permissions name
(:mod:`routes_groups`)."""
