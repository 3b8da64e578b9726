"""One part of a shard manifest as an orchestrator's task: run it, or fail saying why.

An orchestrator reads a task's failure, not haul's exit status, so each call here turns a
non-zero exit into `PartFailed`, which names the part, the status and what the status means
(the same table as `haul --help`). The part's own summary and its `haul: ...` line have gone to
the task's stdout and stderr already (the orchestrator's log of that task)::

    shard_names(manifest)          -> ["1", "2", ...]   what to map or partition over
    run_part_or_raise(manifest, p) -> None, or PartFailed(exit_status 1..4)
    verify_parts(manifest)         -> the exit status of verify over the union (0, 3, ...)
    verify_or_raise(manifest)      -> None, or PartFailed
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from haul.pipelines.config import load_config
from haul.pipelines.shards.manifest import LAST, read_manifest
from haul.pipelines.shards.parts import finished, part_config, run_part
from haul.pipelines.verify_cli import run_verify

EXIT_MEANINGS = {
    1: "stopped (a rejected token, a service that kept failing, a held store, a part it needs "
    "has not finished, or a signal): fix the cause and run the part again; it resumes",
    2: "usage or config error: fix the manifest or its config",
    3: "done, but records failed (haul failures) or verify found differences (verify.csv)",
    4: "stopped by rate limiting: run the part again later; it resumes",
}


class PartFailed(Exception):
    """A part of the manifest, or verify over it, ended with a non-zero exit status: the task
    fails, naming the command that would run it again by hand."""

    def __init__(self, command: str, exit_status: int) -> None:
        self.command = command
        self.exit_status = exit_status
        self.meaning = meaning(exit_status)
        super().__init__(f"{command} exited {exit_status}: {self.meaning}")

    @property
    def retry_may_help(self) -> bool:
        """Whether running the task again may end otherwise: after a stop (1) or rate
        limiting (4) it resumes; a config error (2) or failed records (3) need a person."""
        return self.exit_status in (1, 4)


def meaning(exit_status: int) -> str:
    """What haul's exit status says (an unknown one says so)."""
    if exit_status == 0:
        return "done"
    return EXIT_MEANINGS.get(exit_status, f"an exit status haul does not document ({exit_status})")


def shard_names(manifest_path: str | Path) -> list[str]:
    """The manifest's shards, in its order: one task, or one partition, each."""
    return [part.name for part in read_manifest(Path(manifest_path)).shards]


def run_part_or_raise(manifest_path: str | Path, part: str) -> None:
    """Run one part (as `haul run --manifest FILE --part P`); PartFailed unless it exits 0."""
    exit_status = run_part(manifest_path, part)
    if exit_status:
        raise PartFailed(f"haul run --manifest {manifest_path} --part {part}", exit_status)


def verify_or_raise(manifest_path: str | Path) -> None:
    """Verify over every part (as `haul verify --manifest FILE`); PartFailed unless it exits 0."""
    exit_status = verify_parts(manifest_path)
    if exit_status:
        raise PartFailed(f"haul verify --manifest {manifest_path}", exit_status)


def verify_parts(manifest_path: str | Path, console: Console | None = None) -> int:
    """Verify the target against the union of every part (the last part's store): 0 when it
    matches, 3 with differences (each in verify.csv beside that store), 1 while the last part
    has not finished (nothing to verify yet)."""
    manifest = read_manifest(Path(manifest_path))
    last = manifest.part(LAST)
    if finished(manifest, last) is None:
        return 1
    config = part_config(manifest, last, load_config(manifest.config_path))
    return run_verify(config, None, None, None, console or Console())
