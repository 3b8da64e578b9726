"""The flow model night after night: the same store exports the same bytes, `--partition
month` writes Hive-style monthly Parquet, `--since last` carries the moved issues while
haul.duckdb keeps the whole model, and an export killed anywhere leaves no partial folder."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.dataset as ds
import pytest

from haul.connectors.tracker import TrackerClient
from haul.pipelines.export.layout import sha256_of
from tests.helpers.export_fixtures import HAUL, Staged

LARGE = ("issues", "comments", "changelog", "status_intervals", "issue_daily")
MODEL = ("status_intervals", "issue_field_history", "issue_daily", "cycle_times", "flow_weekly")


def export(staged: Staged, out: Path, *extra: str) -> Path:
    done = staged.haul("export", "--config", staged.config, "--out", out, *extra)
    assert done.returncode == 0, done.stderr
    return (out / "latest").resolve()


def digests(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): sha256_of(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def duck_counts(path: Path) -> dict[str, int]:
    with duckdb.connect(str(path), read_only=True) as db:
        names = [row[0] for row in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return {
            name: db.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]  # type: ignore[index]
            for name in names
        }


def duck_tables(path: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(path), read_only=True) as db:
        names = [row[0] for row in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return {name: db.execute(f'SELECT * FROM "{name}"').fetchall() for name in names}


@pytest.mark.slow  # two whole exports of the small org (make test-all runs it)
def test_the_same_store_exports_the_same_bytes(staged: Staged) -> None:
    """CSV, Parquet and XLSX files are byte-identical from one export to the next; the
    manifests differ only in when they were made and in haul.duckdb's bytes (DuckDB writes
    a few bytes of its own into its header), whose tables hold the same rows in the same
    order; the manifest's per-table row digests are equal in every format."""
    for fmt in ("csv", "parquet", "xlsx"):
        first = export(staged, staged.directory / f"same-{fmt}-1", "--format", fmt)
        second = export(staged, staged.directory / f"same-{fmt}-2", "--format", fmt)
        one, two = digests(first), digests(second)
        assert one.keys() == two.keys()
        differ = sorted(name for name in one if one[name] != two[name])
        assert set(differ) <= {"haul.duckdb", "manifest.json"}, (fmt, differ)
        assert duck_tables(first / "haul.duckdb") == duck_tables(second / "haul.duckdb")
        manifests = [json.loads((f / "manifest.json").read_text()) for f in (first, second)]
        for manifest in manifests:
            manifest.pop("created_at"), manifest["duckdb"].pop("sha256")
        assert manifests[0] == manifests[1]
    csv = json.loads((staged.directory / "same-csv-1/latest/manifest.json").read_text())
    xlsx = json.loads((staged.directory / "same-xlsx-1/latest/manifest.json").read_text())
    assert csv["tables"] == xlsx["tables"]  # the rows are the same whatever the format


def test_partition_month_writes_the_large_tables_hive_style(staged: Staged) -> None:
    """issues, comments, changelog, status_intervals and issue_daily become folders of
    month=YYYY-MM/part-0.parquet; read as Hive datasets they hold every row, and so does
    haul.duckdb; the other tables stay one file each."""
    folder = export(
        staged, staged.directory / "monthly", "--format", "parquet", "--partition", "month"
    )
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in LARGE:
        parts = sorted((folder / name).glob("month=*/part-0.parquet"))
        assert parts, name
        dataset = ds.dataset(folder / name, format="parquet", partitioning="hive")
        assert dataset.count_rows() == manifest["tables"][name]["rows"], name
        months = {part.parent.name.removeprefix("month=") for part in parts}
        assert all(len(month) == 7 and month[4] == "-" for month in months), months
        listed = {e["file"] for e in manifest["files"] if e["table"] == name}
        assert listed == {part.relative_to(folder).as_posix() for part in parts}
    assert (folder / "users.parquet").is_file() and (folder / "flow_weekly.parquet").is_file()
    counts = duck_counts(folder / "haul.duckdb")
    assert counts == {name: entry["rows"] for name, entry in manifest["tables"].items()}
    refused = staged.haul("export", "--config", staged.config, "--out", staged.directory / "no",
                          "--partition", "month")  # fmt: skip
    assert refused.returncode == 2 and "only with --format parquet" in refused.stderr


async def change_the_source(info: dict, key: str) -> None:
    """Move one issue into another status overnight."""
    client = TrackerClient.connect(
        base_url=info["tracker"], token=info["tokens"]["admin"], org_id=info["orgs"]["source"]
    )
    async with client:
        await client.update_issue(key, {"summary": "Moved overnight"})


def test_since_last_carries_the_moved_issues_and_the_database_the_whole_model(
    staged: Staged,
) -> None:
    """After a change at the source and an incremental extract, `--since last` writes the
    model's rows of the moved issue alone in the files, while haul.duckdb holds the model
    of every issue, as many rows as a full export has, and every staged table whole."""
    out = staged.directory / "model-nightly"
    first = export(staged, out)
    key = pd.read_csv(first / "issues.csv", dtype=str)["key"].iloc[0]
    asyncio.run(change_the_source(staged.info, key))
    extracted = staged.haul("extract", "--config", staged.config)
    assert extracted.returncode == 0, extracted.stderr

    second = export(staged, out, "--since", "last")
    full = export(staged, staged.directory / "model-full")

    for name in ("status_intervals", "issue_field_history", "cycle_times"):
        rows = pd.read_csv(second / f"{name}.csv", dtype=str)
        assert set(rows["issue_key"]) == {key}, name
    whole = duck_counts(full / "haul.duckdb")
    nightly = duck_counts(second / "haul.duckdb")
    for name in MODEL:
        assert nightly[name] == whole[name], name
    assert nightly["issues"] == whole["issues"] > 1  # the staged tables whole too
    assert len(pd.read_csv(second / "issues.csv")) == 1  # the files: what changed


def dated(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))


def whole_folder(folder: Path) -> bool:
    """Whether `folder` holds its manifest and every file it lists, with its sha256."""
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return False
    listed = json.loads(manifest.read_text())
    files = [(entry["file"], entry["sha256"]) for entry in listed["files"]]
    files.append((listed["duckdb"]["file"], listed["duckdb"]["sha256"]))
    return all((folder / name).is_file() and sha256_of(folder / name) == sha for name, sha in files)


def incoming(out: Path) -> set[Path]:
    return {path for path in out.iterdir() if path.name.startswith(".incoming-")}


def start_and_wait_for_its_folder(staged: Staged, out: Path) -> subprocess.Popen[bytes]:
    """`haul export` started, once its hidden folder exists (it is writing), or has ended."""
    before = incoming(out)
    child = subprocess.Popen(
        [str(HAUL), "export", "--config", str(staged.config), "--out", str(out),
         "--format", "parquet"],
        env=staged.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not incoming(out) - before and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    return child


@pytest.mark.slow  # test_export_failures' failed write is the default run's no-partial test
def test_an_export_killed_anywhere_leaves_no_partial_folder(staged: Staged) -> None:
    """SIGKILL at random instants while `haul export` writes: every dated folder there is
    whole, and `latest` still names the previous export unless the new one was whole
    first; the next export sweeps what the killed ones left and publishes."""
    out = staged.directory / "killed"
    started = time.monotonic()
    previous = export(staged, out, "--format", "parquet")
    took = time.monotonic() - started
    seed = random.randrange(1 << 30)
    chance = random.Random(seed)
    killed_midway = 0
    for _ in range(6):
        child = start_and_wait_for_its_folder(staged, out)
        time.sleep(chance.uniform(0, took / 2))
        killed_midway += child.poll() is None
        child.send_signal(signal.SIGKILL)  # nothing if it has already ended
        child.wait(30)
        for name in dated(out):
            assert whole_folder(out / name), (seed, name)
        now_latest = (out / "latest").resolve()
        assert now_latest == previous or whole_folder(now_latest), seed
        previous = now_latest
    assert killed_midway, seed  # at least one kill hit an export at work
    final = export(staged, out, "--format", "parquet")
    assert whole_folder(final)
    assert not incoming(out)
