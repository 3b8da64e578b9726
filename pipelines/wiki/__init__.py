"""The wiki as a service of the pipeline: page-tree streams, entity specs, link rewriting."""
