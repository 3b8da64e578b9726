"""The back-fill layer: form answers loaded as tracker issues (`layer.BACKFILL`)."""
