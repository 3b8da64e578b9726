"""The tracker as a service (`service.py`), cut along the load layers, one folder each:
`organisation/`, `issues/`, `children/`, `links/`, `entities/`, `planning/`, `backfill/`,
`changes/`, `flow/`, `checks/`.
Each hands the service one `Layer` (`layer.py`); at the top sit what every layer shares: the
target's maps (`target`, `transform`), the tracker's time format (`timefmt`) and the access
rules of issues and exports (`issue_access`, `export_columns`)."""
