"""The flow layer: the analysts' model of how work flowed, as export tables (`layer.FLOW`)."""
