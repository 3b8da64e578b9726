"""The tracker as a service of the pipeline: its streams, entity specs and transform."""
