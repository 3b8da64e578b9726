"""`haul export`: staged records as CSV, Parquet or XLSX files, in dated folders with a manifest.

A service adds its tables in `pipelines/<service>/export.py` with `register_table` (a fixed
table per staged entity) or `register_tables` (tables built from the store when an export
runs: one per grid, one per survey), and hands them over as `Service.tables`; `tables` holds
the contract, `columns` the conventions, `writers` the formats, `layout` the folders and
`command` the glue.
"""
