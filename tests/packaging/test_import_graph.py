"""haul's modules import on their own and their import graph has no cycle.

Every module of connectors, state, pipelines and orchestrate is imported alone in a fresh
interpreter (an import cycle or a missing import shows up there, not when a whole test session
has already imported everything in a lucky order), and the graph of imports between them, read
from the source (imports inside functions too), must have no cycle. Outside a service's own package,
the shared pipeline modules import no service package: they reach services through
`pipelines.registry`. Inside the tracker, the layer folders import each other only through
what a layer names as shared (`TRACKER_SHARED`), and the layers form no circle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("connectors", "state", "pipelines", "orchestrate")
SERVICES = ("tracker", "wiki", "forms")
# the modules allowed to name services: the list of them, the command line, the demo, the
# sandbox's config writer (config.sandbox) and the config schema (config, config.types: its
# sections name each service's URL)
MAY_NAME_SERVICES = {"registry", "cli", "demo", "sandbox", "config", "types"}
TRACKER = "haul.pipelines.tracker"
# the tracker's layer folders (pipelines.tracker.layer); the modules at the top of the package
# (the contract, timefmt, transform, target, the access rules) are the room every layer shares
TRACKER_LAYERS = (
    "organisation",
    "issues",
    "children",
    "links",
    "entities",
    "planning",
    "backfill",
    "changes",
    "flow",
    "checks",
)
# what a layer lets modules outside its folder import, besides its `layer` module (which only the
# service imports), and why
TRACKER_SHARED = {
    "issues.kinds": "the trees' kind contract: every kind of issues/children/links loads with it",
    "issues.scroll": "the issue listing names an issue without its key: the link survey, the count",
    "issues.statuses": "the drain stages an issue's status as the status kind plans it",
    "issues.fields": "the issue field table: the texts written again name their rows with it",
    "children.checklist_sync": "a checklist's items as haul wrote them: undo takes back only those",
    "changes.deletions": "an issue gone from the source: its links and queue rules still plan",
}


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
def test_only_the_orchestrators_modules_import_them() -> None:
    """haul.orchestrate sits above pipelines (it imports them, nothing imports it): no haul
    command loads an orchestrator's library."""
    known = modules()
    reaching_up = [
        f"{name} -> {target}"
        for name, path in known.items()
        if not name.startswith("haul.orchestrate")
        for target in imported(name, path, set(known))
        if target.startswith("haul.orchestrate")
    ]
    assert reaching_up == []


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


def _layer_of(name: str) -> str | None:
    """The tracker layer folder a module belongs to (None: not inside one)."""
    parts = name.removeprefix(TRACKER + ".").split(".")
    inside = name.startswith(TRACKER + ".") and len(parts) > 1
    return parts[0] if inside and parts[0] in TRACKER_LAYERS else None


def _tracker_imports() -> list[tuple[str, str]]:
    """(importer, imported) for every import of a module in a tracker layer folder from
    outside that folder."""
    known = modules()
    found = []
    for name, path in known.items():
        for target in imported(name, path, set(known)):
            layer = _layer_of(target)
            if layer is not None and _layer_of(name) != layer:
                found.append((name, target))
    return found


@pytest.mark.fast
def test_tracker_layers_import_each_other_only_through_what_they_share() -> None:
    """Outside its folder, a layer's modules are imported by the service (its `layer`, and
    what `TrackerService.target` wires) or named in TRACKER_SHARED; nothing else reaches in."""
    reaching_in = [
        f"{name} -> {target}"
        for name, target in _tracker_imports()
        if name != f"{TRACKER}.service" and target.removeprefix(TRACKER + ".") not in TRACKER_SHARED
    ]
    assert reaching_in == []
    assert all(_layer_of(f"{TRACKER}.{shared}") for shared in TRACKER_SHARED)


def _tracker_node(name: str) -> str | None:
    """A tracker module's node: its layer folder, or itself for a file at the top of the
    package (the shared room); None outside the tracker."""
    if not name.startswith(TRACKER + "."):
        return None
    return _layer_of(name) or name.removeprefix(TRACKER + ".")


@pytest.mark.fast
def test_tracker_layers_form_no_circle() -> None:
    """The layer folders, one node each, and the files at the top of the tracker (the room
    every layer shares), one node each too, import one another without a circle: the shared
    room reaches into no layer that reaches back into it."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        importer = _tracker_node(name)
        if importer is None:
            continue
        graph.setdefault(importer, set())
        for target in imported(name, path, set(known)):
            node = _tracker_node(target)
            if node is not None and node != importer:
                graph[importer].add(node)
                graph.setdefault(node, set())
    assert {"target", "transform", "layer", "issues", "children", "changes"} <= set(graph)
    assert cycles(graph) == []


@pytest.mark.fast
def test_tracker_folders_stay_small() -> None:
    """At most 8 files at the top of pipelines/tracker, at most 13 in each layer folder (the
    issues and children layers hold the bulk and incremental reads, the target's limits, text
    patches and undo), and every folder there is a layer the service lists."""
    top = ROOT / "pipelines" / "tracker"
    files = [path.name for path in top.glob("*.py")]
    folders = sorted(
        path.name for path in top.iterdir() if path.is_dir() and path.name != "__pycache__"
    )
    assert len(files) <= 8, files
    assert folders == sorted(TRACKER_LAYERS)
    crowded = {f: n for f in folders if (n := len(list((top / f).glob("*.py")))) > 13}
    assert crowded == {}


@pytest.mark.fast
def test_the_tracker_scroll_imports_nothing_of_the_load() -> None:
    """The issue scroll reads and writes times through `timefmt` alone, the tracker's time
    format written once, not through a load-side module."""
    known = modules()
    name = f"{TRACKER}.issues.scroll"
    inside = {t for t in imported(name, known[name], set(known)) if t.startswith(TRACKER + ".")}
    assert inside == {f"{TRACKER}.timefmt"}


def _import_alone(name: str) -> tuple[str, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=120
    )
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return name, done.returncode, last


@pytest.mark.slow  # a minute: every module in its own interpreter (make test-all runs it)
@pytest.mark.timeout(600)
def test_every_module_imports_on_its_own() -> None:
    """Each module, first thing in a fresh interpreter, imports without error."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(_import_alone, sorted(modules())))
    assert [(name, error) for name, code, error in results if code] == []


@pytest.mark.fast
def test_commands_take_the_services_from_the_cli() -> None:
    """The list of services is read in one place, the command line (and the demo, the
    command line's own rehearsal): every command and library stage takes the services as a
    parameter, so a caller (a test, a plug-in) hands its own."""
    known = modules()
    registry = "haul.pipelines.registry"
    readers = sorted(
        name
        for name, path in known.items()
        if registry in imported(name, path, set(known)) and name != registry
    )
    assert readers == ["haul.pipelines.cli", "haul.pipelines.commands.demo"]
