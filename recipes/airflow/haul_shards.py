"""A haul shard manifest as an Airflow DAG: first >> one mapped task per shard >> last >> verify.

Put this file in the DAGs folder of an Airflow 3 deployment whose workers have haul installed
(`pip install haul-etl[airflow]` installs both), write the manifest where every worker can read
it (`haul plan --shards N --manifest FILE`), and trigger the DAG with the manifest's path as
its `manifest` parameter (default: the HAUL_MANIFEST environment variable of the scheduler).

- `first` runs the manifest's first part, then lists its shards; the shards are mapped over
  that list when the run gets there (dynamic task mapping), so a manifest planned anew needs
  no change here.
- `shard` runs one shard per mapped task, each named by the part it runs
  (`map_index_template`: the UI lists the manifest's parts, not map indexes 0..N-1);
  `max_active_tis_per_dagrun` bounds how many run at once. Airflow's pools count slots, not requests: parts that share a token share its rate
  through haul's own budget, as the manifest says.
- `last` runs the last part once every shard has finished; `verify` runs verify over them all.

Each task calls the entry point of `haul run --manifest FILE --part P` in the worker's process
(tokens from the worker's environment, as for `haul run`), exactly once and resumable: a
retry resumes the part. A task fails on a non-zero exit, naming the status and its meaning;
a stop (1) or rate limiting (4) is retried, a config error (2) or failed records (3) fail at
once (a person decides; `haul failures`, `haul status --manifest FILE`).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import dag, task

try:  # Airflow 3.1 and later
    from airflow.sdk.exceptions import AirflowFailException
except ImportError:  # pragma: no cover - Airflow 3.0
    from airflow.exceptions import AirflowFailException

MANIFEST = "{{ params.manifest }}"  # rendered when a task runs: the run's own manifest


def run_or_fail(manifest: str, part: str | None) -> None:
    """Run `part` (None: verify over every part); a failure Airflow retries only when a
    retry may help. haul is imported here, not when the scheduler parses this file."""
    from haul.orchestrate.parts import PartFailed, run_part_or_raise, verify_or_raise

    try:
        if part is None:
            verify_or_raise(manifest)
        else:
            run_part_or_raise(manifest, part)
    except PartFailed as failed:
        if failed.retry_may_help:
            raise
        raise AirflowFailException(str(failed)) from failed


@task
def first(manifest: str) -> list[str]:
    """The first part; then the shards to map over."""
    from haul.orchestrate.parts import shard_names

    run_or_fail(manifest, "first")
    return shard_names(manifest)


@task(max_active_tis_per_dagrun=4, map_index_template="{{ part }}")
def shard(manifest: str, part: str) -> None:
    """One shard of the manifest, its mapped task named by the part it runs."""
    from airflow.sdk import get_current_context

    get_current_context()["part"] = part  # what map_index_template renders
    run_or_fail(manifest, part)


@task
def last(manifest: str) -> None:
    """The last part: links across shards, autoactions, over the union of every part."""
    run_or_fail(manifest, "last")


@task
def verify(manifest: str) -> None:
    """haul verify over the union of every part; fails on differences."""
    run_or_fail(manifest, None)


@dag(
    dag_id="haul_shards",
    schedule=None,  # a migration is triggered by a person; a nightly export would set one
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,  # one run of a manifest at a time: each part holds its store's lock
    params={"manifest": os.environ.get("HAUL_MANIFEST", "/srv/haul/manifest.json")},
    default_args={"retries": 2, "retry_delay": timedelta(minutes=10)},
    tags=["haul"],
)
def haul_shards() -> None:
    """A sharded haul migration: first >> shards (mapped) >> last >> verify."""
    shards = first(MANIFEST)
    done = shard.partial(manifest=MANIFEST).expand(part=shards)
    done >> last(MANIFEST) >> verify(MANIFEST)


shards_dag = haul_shards()

if __name__ == "__main__":  # python haul_shards.py: one run in this process (Airflow's dag.test)
    shards_dag.test()
