"""The changes layer: deletions at the source, undo, the sync's preview (`layer.CHANGES`)."""
