"""Tests of haul.orchestrate: a shard manifest as Dagster assets and as an Airflow DAG."""
