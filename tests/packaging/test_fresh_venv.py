"""A fresh virtualenv with only haul's wheel installed has `haul`, and no module named `state`.

The wheel is built the way pip builds it for any user (an isolated build); the fresh venv
borrows the test environment's site-packages for haul's dependencies only, through a path
file, so nothing of the checkout or of its editable install is visible there.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the built wheel installed, and haul's dependencies on its path."""
    work = tmp_path_factory.mktemp("fresh")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(work / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0:
        pytest.skip(
            f"building the wheel needs the package index for setuptools: {built.stderr[-300:]}"
        )
    wheel = next((work / "dist").glob("haul_etl-*.whl"))
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    # dependencies from the test environment: a plain path line, so its .pth hooks (the
    # editable install of this checkout) are not run in the fresh venv
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return env_dir


def test_only_the_haul_namespace_is_installed(fresh: Path, tmp_path: Path) -> None:
    """`import state` fails there; `import haul.state` works."""
    python = fresh / "bin" / "python"
    bare = subprocess.run(
        [python, "-c", "import state"], cwd=tmp_path, capture_output=True, text=True
    )
    assert bare.returncode != 0 and "No module named 'state'" in bare.stderr
    ours = subprocess.run(
        [python, "-c", "import haul.state, haul.pipelines.cli; print(haul.state.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ours.returncode == 0, ours.stderr
    assert str(fresh) in ours.stdout  # the wheel's copy, not the checkout's


def test_haul_help_works_there(fresh: Path, tmp_path: Path) -> None:
    """The console script of the wheel runs."""
    done = subprocess.run(
        [fresh / "bin" / "haul", "--help"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "Commands:" in done.stdout
