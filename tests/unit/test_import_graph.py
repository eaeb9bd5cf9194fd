"""No import cycles between our modules (pms/, workers/, cli/), and no service importing the API
layer.

The graph is built with `ast` from every `import` statement, at module level AND inside
functions: an import moved into a function to dodge a cycle still counts, because the cycle is
still there (only its failure moved from import time to call time). Decided exclusions, both
never executed at run time: imports under `if TYPE_CHECKING:` (STYLE: "cycle-only imports"),
and nothing else. `from package import name` is an edge to `package.name` when that is one of
our modules, else to `package`. A parent package's `__init__` is not counted as imported by
its submodules (Python initialises the parent first, so it cannot close a cycle at import).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pms", "workers", "cli")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[_module_name(path)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else (
                test.attr if isinstance(test, ast.Attribute) else None)
            if name == "TYPE_CHECKING":
                for inner in node.body:
                    skip.update(id(n) for n in ast.walk(inner))
    return skip


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    out.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                if candidate in modules:
                    out.add(candidate)
                elif source in modules:
                    out.add(source)
    out.discard(name)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    names = set(modules)
    return {name: imports_of(name, path, names) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_resources_import_the_route_leaf_not_the_route_table():
    """pms.routes imports every resource; a resource (or health/openapi) importing it back is
    the cycle pms.api.route exists to avoid."""
    graph = import_graph()
    back = sorted(name for name in graph["pms.routes"] if "pms.routes" in graph.get(name, ()))
    assert back == []
    assert graph["pms.api.route"] <= {"pms.api.spec"}


def test_the_graph_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg import b\n")
    (pkg / "b.py").write_text("from . import a\nfrom typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from pkg import c\n")
    (pkg / "c.py").write_text("")
    names = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    assert imports_of("pkg.a", pkg / "a.py", names) == {"pkg.b"}
    assert imports_of("pkg.b", pkg / "b.py", names) == {"pkg.a"}  # TYPE_CHECKING excluded
    assert cycles({"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": set()}) == [["pkg.a",
                                                                                   "pkg.b"]]


def test_no_service_imports_the_api_layer():
    graph = import_graph()
    offenders = sorted(f"{name} -> {target}" for name, targets in graph.items()
                       if name.startswith(("pms.services", "pms.domain", "pms.models",
                                           "pms.queries", "pms.db"))
                       for target in targets if target.startswith("pms.api"))
    assert offenders == []


# The layers, lowest first. A module may import its own layer and the ones below it,
# never one above: the domain knows no storage, storage knows no use case, a use case knows
# neither the relay that publishes its events nor the API, worker or CLI that call it. The read
# side (pms.queries: the loaders, the recounts and the GETs) stands below the write side, which
# finds its rows there; a query never imports a use case.
LAYERS = (
    ("pms.domain",),
    ("pms.db", "pms.models", "pms.platform"),
    ("pms.queries",),  # the read side: loaders, recounts, the GETs
    ("pms.services",),  # the use cases
    ("pms.relay",),
    ("pms.api", "pms.routes", "pms.app", "workers", "cli"),
)


def _layer(module: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for name, targets in graph.items():
        rank = _layer(name)
        if rank is None:
            continue
        for target in targets:
            other = _layer(target)
            if other is not None and other > rank:
                out.append(f"{name} -> {target}")
    return sorted(out)


def test_layers_import_one_way():
    assert upward_imports(import_graph()) == []


def test_the_layer_rule_catches_an_upward_import():
    graph = {"pms.services.frontdesk.checkin": {"pms.relay.sweep"},
             "pms.relay.sweep": {"pms.services.idempotency"},
             "pms.domain.money": {"pms.db.fields"}}
    assert upward_imports(graph) == ["pms.domain.money -> pms.db.fields",
                                     "pms.services.frontdesk.checkin -> pms.relay.sweep"]


def test_services_live_in_capability_packages():
    """pms/services/ holds capability packages; the only flat modules are the few that serve
    every capability (tenant setup, jobs and how a job is written down, idempotency purge,
    folds, body references, notifications). A new capability arrives as a package of its own."""
    root = Path(__file__).resolve().parents[2] / "pms" / "services"
    flat = sorted(p.stem for p in root.glob("*.py") if p.stem != "__init__")
    assert flat == ["environments", "folds", "idempotency", "job_records", "jobs",
                    "notifications", "references"]
    assert not list((root.parent).glob("relay*.py"))
    for package in (p for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (package / "__init__.py").read_text().startswith('"""'), package


def test_no_import_cycles():
    """Any cycle fails, wherever it is (the last known ones, the route table with its resources
    and the worker modules, were closed by pms.api.route and workers.boot)."""
    found = cycles(import_graph())
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("modules", [
    ("pms.services.inventory.inventory", "pms.queries.inventory"),
    ("pms.services.cashiering.folios", "pms.services.reservations.reservations", "pms.services.reservations.stays"),
    ("pms.routes", "pms.api.health", "pms.api.openapi", "pms.api.resources.reservations"),
    ("workers.actors", "workers.broker", "workers.middleware", "workers.runtime",
     "workers.subscriptions"),
])
def test_no_import_cycles_through_the_groups_closed_in_issue_16(modules):
    """The cycles once closed stay closed (inventory service/queries; folios,
    reservations and stays; the route table and its resources; the worker modules): none of
    these modules lies on a cycle (a function-level import counts)."""
    graph = import_graph()
    for module in modules:
        assert not any(module in component for component in cycles(graph)), module
