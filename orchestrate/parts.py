"""One part of a shard manifest as an orchestrator's task: run it, or fail saying why.

A task runs the command a person would run by hand (`haul run --manifest FILE --part P`,
`haul verify --manifest FILE`) in a child process of the task's own. In its own process haul
owns what a run needs to own: the logging setup (haul.log beside the part's store, never the
orchestrator's handlers), the signal handlers that stop a part at a safe point, the memory.
The child writes to the task's stdout and stderr, which the orchestrator keeps as the task's
log; when the orchestrator stops the task, the child is asked to stop too (SIGTERM: haul
finishes what is under way, commits, and the next run resumes).

An orchestrator reads a task's failure, not an exit status, so a non-zero exit becomes
`PartFailed`, naming the command, the status and what it means (as `haul --help` says)::

    shard_names(manifest)          -> ["1", "2", ...]   what to map or partition over
    token_variables(manifest, p)   -> ("SRC_TOKEN", "TGT_TOKEN")  what a part's tokens are read from
    run_part_or_raise(manifest, p) -> None, or PartFailed(exit_status 1..4)
    verify_or_raise(manifest)      -> None, or PartFailed (3: the target differs)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from haul.pipelines.config import load_config
from haul.pipelines.shards.manifest import read_manifest
from haul.pipelines.shards.parts import part_config

EXIT_MEANINGS = {
    1: "stopped (a rejected token, a service that kept failing, a held store, a part it needs "
    "has not finished, or a signal): fix the cause and run it again; it resumes",
    2: "usage or config error: fix the manifest or its config",
    3: "done, but records failed (haul failures) or verify found differences (verify.csv)",
    4: "stopped by rate limiting: run it again later; it resumes",
}
# the `haul` command of this interpreter: the orchestrator's worker has haul installed, not
# necessarily its console script on PATH
HAUL = (sys.executable, "-c", "from haul.pipelines.cli import main; main(prog_name='haul')")
STOP_GRACE_S = 60.0  # how long a stopped part may take to commit what it has under way


class PartFailed(Exception):
    """A part of the manifest, or verify over it, ended with a non-zero exit status: the task
    fails, naming the command that runs it again by hand."""

    def __init__(self, command: str, exit_status: int, said: str = "") -> None:
        self.command = command
        self.exit_status = exit_status
        self.meaning = meaning(exit_status)
        self.said = said  # haul's last line on stderr: what went wrong, what to do
        told = f"; {said}" if said else ""
        super().__init__(f"{command} exited {exit_status}: {self.meaning}{told}")

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


def token_variables(manifest_path: str | Path, part: str) -> tuple[str, ...]:
    """The environment variables `part` reads its tokens from (source, then target; one when
    both sides read the same): the names, never the tokens. Parts that read one token share
    its rate budget, so an orchestrator may let only so many of them run at once."""
    manifest = read_manifest(Path(manifest_path))
    config = part_config(manifest, manifest.part(part), load_config(manifest.config_path))
    sides = [config.source, *([config.target] if config.target is not None else [])]
    return tuple(dict.fromkeys(side.token_env for side in sides))


def run_part_or_raise(manifest_path: str | Path, part: str) -> None:
    """Run one part (`haul run --manifest FILE --part P`); PartFailed unless it exits 0."""
    haul_or_raise("run", "--manifest", str(manifest_path), "--part", part)


def verify_or_raise(manifest_path: str | Path) -> None:
    """Verify over every part (`haul verify --manifest FILE`): PartFailed unless the target
    matches the union of the parts' stores."""
    haul_or_raise("verify", "--manifest", str(manifest_path))


def haul_or_raise(*args: str) -> None:
    """Run `haul ARGS`; PartFailed naming the command unless it exits 0."""
    exit_status, said = run_haul(*args)
    if exit_status:
        raise PartFailed("haul " + " ".join(args), exit_status, said)


def run_haul(*args: str) -> tuple[int, str]:
    """Run `haul ARGS` in a child process, with this process's environment (the tokens) and
    stdout; its exit status and its last `haul: ...` line (its stderr passes through). If
    this process is stopped while the child runs (the orchestrator ends the task), the child
    is stopped too, at a safe point."""
    said = ""
    with subprocess.Popen([*HAUL, *args], stderr=subprocess.PIPE, text=True) as child:
        try:
            assert child.stderr is not None
            for line in child.stderr:
                sys.stderr.write(line)
                if line.startswith("haul: "):
                    said = line.removeprefix("haul: ").strip()
            return child.wait(), said
        finally:
            if child.poll() is None:
                stop_child(child)


def stop_child(child: subprocess.Popen[str]) -> None:
    """SIGTERM (haul commits what is under way), then SIGKILL after STOP_GRACE_S: the ledger
    makes a killed part safe to run again, only slower to resume. What the child says while
    it stops passes through."""
    child.terminate()
    try:
        _, said = child.communicate(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        _, said = child.communicate()
    sys.stderr.write(said or "")
