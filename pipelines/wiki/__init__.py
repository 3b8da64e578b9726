"""The wiki as a service (`service.py`): page-tree streams and drain, entity specs with their
fingerprints, link rewriting, the grid sync, verify, exports, and the back-fill of form answers
into grids."""
