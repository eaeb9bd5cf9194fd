"""No module reaches into another package's private names.

A name with a leading underscore is its module's own; another package that needs it asks for a
public name instead, so what a package offers is what it names. "Package" here is a capability
package under pms/services (pms.services.<capability>) or a top-level layer (pms.api, pms.db,
pms.queries, pms.domain, ..., workers, cli). Both spellings count: `from x import _name` and
`module._name` on a module imported from another package. Dunders (`__version__`) are public.
Modules inside one package may share their private helpers.

Each package also names, in its `__init__.py`, the modules other packages may import
(`PUBLIC_MODULES`): a capability package under pms/services, pms.queries and pms.platform. An
import from outside the package of a module not named there fails; so does a package without
the list, or a name in it that is no module.
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


# -- each package names the modules other packages may import -------------------------------------

SURFACED = ("pms.queries", "pms.platform")  # with every capability package under pms/services


def surfaced_packages() -> list[str]:
    """Every package that names its public modules: each capability package under
    pms/services, pms.queries and pms.platform."""
    services = sorted(f"pms.services.{p.parent.name}"
                      for p in (ROOT / "pms" / "services").glob("*/__init__.py"))
    return [*services, *SURFACED]


def public_modules(package: str) -> tuple[str, ...] | None:
    """The `PUBLIC_MODULES` tuple of the package's `__init__.py`, read without importing it."""
    init = ROOT.joinpath(*package.split(".")) / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "PUBLIC_MODULES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return None


def imported_modules(source: str, modules: set[str]) -> set[str]:
    """Every module of ours that `source` imports, at module level or inside a function:
    `from a.b import c` is `a.b.c` when that is a module, else `a.b`; `import a.b.c` is its
    longest prefix that is a module."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                       else node.module for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target:
                out.add(target)
    return out


def off_surface(module: str, source: str, modules: set[str],
                surfaces: dict[str, tuple[str, ...]]) -> list[str]:
    """Every module of another package that `source` (the text of `module`) imports although
    that package's `PUBLIC_MODULES` does not name it (the package itself, its `__init__`, is
    always public)."""
    mine = package_of(module)
    found = []
    for target in imported_modules(source, modules):
        package = package_of(target)
        if package == mine or package not in surfaces or target == package:
            continue
        if target[len(package) + 1:].split(".")[0] not in surfaces[package]:
            found.append(target)
    return sorted(found)


def test_every_package_names_its_public_modules_and_each_exists():
    modules = set(_all_modules())
    for package in surfaced_packages():
        names = public_modules(package)
        assert names is not None, f"{package}/__init__.py has no PUBLIC_MODULES"
        assert len(set(names)) == len(names), (package, names)
        missing = [n for n in names if f"{package}.{n}" not in modules]
        assert missing == [], (package, missing)


def test_imports_across_packages_name_public_modules_only():
    """A module of pms/, workers/ or cli/ imports another package's module only when that
    package's `PUBLIC_MODULES` names it (tests and benchmarks may import any module)."""
    modules = _all_modules()
    names = set(modules)
    surfaces = {p: public_modules(p) or () for p in surfaced_packages()}
    found = {name: hits for name, path in sorted(modules.items())
             if (hits := off_surface(name, path.read_text(), names, surfaces))}
    assert found == {}


def test_the_surface_check_catches_an_import_of_an_unnamed_module():
    """The control: a module outside its package's list is found, whichever spelling imports
    it (from-import of the module, of a name in it, a dotted import, inside a function); a
    listed module, the package itself and a sibling's unlisted module are not."""
    modules = {"pms.services.groups", "pms.services.groups.banquets",
               "pms.services.groups.event_stock", "pms.services.groups.function_spaces",
               "pms.queries", "pms.queries.lookups", "pms.api.resources.banquets"}
    surfaces = {"pms.services.groups": ("banquets",), "pms.queries": ("lookups",)}
    source = "\n".join([
        "from pms.services.groups import banquets",
        "from pms.services.groups.banquets import post_event",
        "from pms.services.groups import function_spaces",
        "import pms.services.groups.event_stock",
        "from pms.queries.lookups import load_property",
        "def f():",
        "    from pms.services.groups.event_stock import units",
    ])
    assert off_surface("pms.api.resources.banquets", source, modules, surfaces) == [
        "pms.services.groups.event_stock", "pms.services.groups.function_spaces"]
    sibling = "from pms.services.groups.event_stock import units"
    assert off_surface("pms.services.groups.banquets", sibling, modules, surfaces) == []
    assert off_surface("pms.api.resources.banquets", "from pms.services import groups",
                       modules, surfaces) == []
