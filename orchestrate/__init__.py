"""haul's shard manifest as the tasks of an orchestrator that data engineers already run.

`haul plan --shards N --manifest FILE` cuts a migration into parts (first, the shards, last);
this package hands those parts to an orchestrator, one task per part, each calling the same
entry point as `haul run --manifest FILE --part P`:

- `haul.orchestrate.dagster`: Dagster assets (the shards are one partitioned asset) and an
  asset check that runs verify; `pip install haul-etl[dagster]`.
- `recipes/airflow/haul_shards.py` (in the repository): an Airflow DAG of mapped tasks.

`haul.orchestrate.parts` is what both share and neither orchestrator's library is needed for.
The package sits above `pipelines` (it imports pipelines; nothing of haul imports it), so an
orchestrator's library is imported only by the module named after it.
"""
