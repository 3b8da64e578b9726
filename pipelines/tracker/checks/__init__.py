"""The checks layer: what `haul check` finds for the tracker (`layer.CHECKS`)."""
