"""The organisation layer: dictionaries, fields, queues, components, versions, boards, sprints,
queue permissions (`layer.ORGANISATION`)."""
