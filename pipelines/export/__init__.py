"""`haul export`: staged records as CSV, Parquet or XLSX files, in dated folders with a manifest.

A service declares its tables in `pipelines/<service>/export.py`, a `Table` per staged entity or
a `Family` of tables built from the store when an export runs (one per grid, one per survey),
and hands them over as `Service.tables` (its pages as `Service.pages`); `tables` holds
the contract, `columns` the conventions, `writers` the formats, `layout` the folders and
`command` the glue.
"""
