"""No module reaches into another package's private names.

A name with a leading underscore is its module's own; another package that needs it asks for a
public name instead, so what a package offers is what it names. "Package" here is a capability
package under pms/services (pms.services.<capability>) or a top-level layer (pms.api, pms.db,
pms.queries, pms.domain, ..., workers, cli). Both spellings count: `from x import _name` and
`module._name` on a module imported from another package. Dunders (`__version__`) are public.
Modules inside one package may share their private helpers.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pms", "workers", "cli")


def package_of(module: str) -> str:
    parts = module.split(".")
    if parts[:2] == ["pms", "services"] and len(parts) > 2:
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if parts[0] == "pms" else parts[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def reach_ins(module: str, source: str, modules: set[str]) -> list[str]:
    """Every private name of another package that `source` (the text of `module`) uses."""
    mine = package_of(module)
    found = []
    bound: dict[str, str] = {}  # a local name bound to a module of another package
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if package_of(node.module) == mine or node.module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.module}.{alias.name}")
                elif f"{node.module}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and package_of(alias.name) != mine and alias.name in modules:
                    bound[alias.asname] = alias.name
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and _private(node.attr)):
            found.append(f"{bound[node.value.id]}.{node.attr}")
    return sorted(set(found))


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def test_no_module_uses_another_packages_private_names():
    modules = _all_modules()
    names = set(modules)
    found = {name: hits for name, path in sorted(modules.items())
             if (hits := reach_ins(name, path.read_text(), names))}
    assert found == {}


def test_the_check_sees_both_spellings_and_spares_the_own_package():
    """The control: a reach-in by name and by attribute is found; a sibling's private helper,
    a dunder and a public name are not."""
    modules = {"pms.services.inventory.inventory", "pms.services.groups.blocks",
               "pms.services.groups.grid", "pms.queries.availability"}
    source = "\n".join([
        "from pms.services.inventory.inventory import _refresh, lock_days",
        "from pms.services.inventory import inventory",
        "from pms.services.groups.grid import _shared",
        "from pms.queries import availability as av",
        "inventory._recount(1)",
        "inventory.lock_days(1)",
        "av.__name__",
        "av._rules",
    ])
    assert reach_ins("pms.services.groups.blocks", source, modules) == [
        "pms.queries.availability._rules", "pms.services.inventory.inventory._recount",
        "pms.services.inventory.inventory._refresh"]
