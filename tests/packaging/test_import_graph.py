"""haul's modules import on their own and their import graph has no cycle.

Every module of connectors, state and pipelines is imported alone in a fresh interpreter (an
import cycle or a missing import shows up there, not when a whole test session has already
imported everything in a lucky order), and the graph of imports between them, read from the
source (imports inside functions too), must have no cycle. Outside a service's own package,
the shared pipeline modules import no service package: they reach services through
`pipelines.registry`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("connectors", "state", "pipelines")
SERVICES = ("tracker", "wiki", "forms")
# the modules allowed to name services: the list of them, the command line, the demo, the
# sandbox's config writer and the config schema (its sections name each service's URL)
MAY_NAME_SERVICES = {"registry", "cli", "demo", "sandbox_config", "config", "config_types"}


def modules() -> dict[str, Path]:
    """Every module's dotted name -> its file."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(("haul", *parts))] = path
    return found


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The haul modules `name` imports, anywhere in its source."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".")
                keep = len(package) - node.level + (1 if path.name == "__init__.py" else 0)
                base = ".".join([*package[:keep], *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.fast
def test_the_import_graph_has_no_cycle() -> None:
    """No module reaches itself through the modules it imports."""
    known = modules()
    graph = {name: imported(name, path, set(known)) for name, path in known.items()}
    assert cycles(graph) == []


@pytest.mark.fast
def test_shared_pipeline_modules_import_no_service_package() -> None:
    """The engine, the runner, check, plan, verify, status, reports and export reach the
    services through the registry only."""
    known = modules()
    services = tuple(f"haul.pipelines.{service}" for service in SERVICES)
    naming = []
    for name, path in known.items():
        parts = name.split(".")
        shared = parts[1] == "pipelines" and not name.startswith(services)
        if not shared or parts[-1] in MAY_NAME_SERVICES:
            continue
        naming += [
            f"{name} -> {t}" for t in imported(name, path, set(known)) if t.startswith(services)
        ]
    assert naming == []


def _import_alone(name: str) -> tuple[str, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=120
    )
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return name, done.returncode, last


@pytest.mark.timeout(600)
def test_every_module_imports_on_its_own() -> None:
    """Each module, first thing in a fresh interpreter, imports without error."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(_import_alone, sorted(modules())))
    assert [(name, error) for name, code, error in results if code] == []
