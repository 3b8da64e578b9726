"""The sync layer: status changes, moved issues, deletions at the source (`layer.SYNC`)."""
