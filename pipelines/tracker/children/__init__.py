"""The children layer: what hangs under an issue (`layer.CHILDREN`)."""
