"""A service reads like one use case in one unit of work: it never times its writes
nor asks which database it runs on.

Every module under `pms/services` is parsed (`ast`) and may not call the write-timing
machinery or the database-kind check: `born` and `locked_row` (the unit of work learns them
from the insert and the locked read: `pms.db.base.AggregateModel`, `pms.db.locking.for_update`,
`Statement(locks=)`), `save_with_commit`, `insert_with_commit`, `statement_with_commit`,
`send_with_commit` (a service calls `uow.save`, `uow.add`, `uow.write_sql`: the unit
of work decides when they go out and flushes them before any later statement), nor
`is_postgres` (a fast path decorates its portable reference, `pms.db.dialect.fast_path`, and
the database chooses). A call counts by its name, as a plain name or an attribute
(`uow.born(...)`, `database.is_postgres()`). No module is exempt.

A PostgreSQL-only compiled write (`uow.queue(statement, values)`) is sent only from a fast path:
the function that calls it is the argument of a `fast_path(...)` decorator in its module, so
the use case calls the decorated reference and never chooses a dialect.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "pms" / "services"

FORBIDDEN = frozenset({"is_postgres", "born", "locked_row", "save_with_commit",
                       "send_with_commit", "statement_with_commit", "insert_with_commit"})

# (module path relative to pms/services, name): why. Empty, and meant to stay so.
ALLOWED: dict[tuple[str, str], str] = {}


def forbidden_calls(source: str) -> list[tuple[int, str]]:
    """(line, name) of each call of a forbidden name in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = (func.id if isinstance(func, ast.Name)
                else func.attr if isinstance(func, ast.Attribute) else None)
        if name in FORBIDDEN:
            found.append((node.lineno, name))
    return found


DISPATCHERS = ("fast_path", "dialect_variant")  # pms.db.dialect


def queues_outside_fast_paths(source: str) -> list[tuple[int, str]]:
    """(line, function) of each `uow.queue(...)` call in a function no `fast_path(...)`
    decorator of the module names."""
    tree = ast.parse(source)
    fast = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and getattr(deco.func, "id", None) in DISPATCHERS
                        and deco.args and isinstance(deco.args[0], ast.Name)):
                    fast.add(deco.args[0].id)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.name in fast:
            continue
        for inner in node.body:
            for call in ast.walk(inner):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "queue"
                        and getattr(call.func.value, "id", None) == "uow"):
                    found.append((call.lineno, node.name))
    return found


def test_a_postgresql_only_write_is_queued_only_by_a_fast_path():
    offenders = []
    for path in sorted(SERVICES.rglob("*.py")):
        for line, name in queues_outside_fast_paths(path.read_text()):
            offenders.append(f"pms/services/{path.relative_to(SERVICES)}:{line}: in {name}()")
    assert not offenders, "uow.queue outside a fast path:\n" + "\n".join(offenders)


def test_the_fast_path_check_finds_a_queue_in_a_use_case():
    snippet = """
from pms.db.dialect import fast_path

def _fast(uow, row):
    uow.queue(STATEMENT, {"id": row.id})     # a fast path: allowed

@fast_path(_fast)
def write(uow, row):
    row.save()

def use_case(uow, row):
    uow.queue(STATEMENT, {"id": row.id})     # the use case chose the dialect: refused
"""
    assert [name for _, name in queues_outside_fast_paths(snippet)] == ["use_case"]


def test_no_service_times_its_writes_or_asks_the_database_kind():
    offenders = []
    modules = sorted(SERVICES.rglob("*.py"))
    assert len(modules) > 40  # (the walk found the services)
    for path in modules:
        relative = str(path.relative_to(SERVICES))
        for line, name in forbidden_calls(path.read_text()):
            if (relative, name) not in ALLOWED:
                offenders.append(f"pms/services/{relative}:{line}: {name}()")
    assert not offenders, "services call the write timing or the database kind:\n" + "\n".join(
        offenders)


def test_the_check_finds_each_forbidden_call():
    snippet = """
from pms.db.database import is_postgres
from pms.db.uow import locked_row

def use_case(uow, row, db):
    if is_postgres():
        uow.born(row)
    locked_row(row)
    uow.save_with_commit(row)
    uow.insert_with_commit(row)
    uow.statement_with_commit(None, {}, None)
    uow.send_with_commit("", [])
    db.is_postgres()
    uow.save(row)          # the plain API: allowed
    born = row.version     # a name that is not called: allowed
"""
    names = sorted(name for _, name in forbidden_calls(snippet))
    assert names == sorted(["is_postgres", "born", "locked_row", "save_with_commit",
                            "insert_with_commit", "statement_with_commit", "send_with_commit",
                            "is_postgres"])


def test_the_exceptions_name_real_modules():
    for (relative, name), why in ALLOWED.items():
        assert (SERVICES / relative).is_file() and name in FORBIDDEN and why


# SQL in a service lives in its capability's store (`STORE_MODULES` in the package's
# `__init__.py`): a use case module loads through the models and the store, never writes a
# statement of its own. `Statement.build` (a peewee query compiled once: the models' own
# portable SQL, no text) is the models' and allowed anywhere. (module path relative to pms/services): why it holds SQL anyway.
SQL_ELSEWHERE: dict[str, str] = {
    "admin/admin_lists.py": "a list's count estimate: EXPLAIN of the list's own query, and its "
                            "capped count, both built from the peewee query it pages",
    "admin/policy_decision.py": "the request's version check rides on a bare `SELECT 1` when "
                                "the request sent no statement to carry it",
}

SQL_CALLS = frozenset({"text", "execute_sql"})


def sql_calls(source: str) -> list[int]:
    """Lines of each statement written in `source`: `Statement.text(...)`, `Statement(...)`
    and `execute_sql(...)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "Statement":
            found.append(node.lineno)
        elif isinstance(func, ast.Attribute) and (
                func.attr == "execute_sql"
                or (func.attr == "text" and getattr(func.value, "id", None) == "Statement")):
            found.append(node.lineno)
    return found


def _store_modules(package: Path) -> tuple[str, ...]:
    tree = ast.parse((package / "__init__.py").read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "STORE_MODULES"):
            return tuple(ast.literal_eval(node.value))
    return ()


def test_sql_lives_only_in_each_capabilitys_store():
    offenders = []
    stored = 0
    for path in sorted(SERVICES.rglob("*.py")):
        relative = str(path.relative_to(SERVICES))
        lines = sql_calls(path.read_text())
        if not lines or relative in SQL_ELSEWHERE:
            continue
        if path.stem in _store_modules(path.parent):
            stored += len(lines)
            continue
        offenders += [f"pms/services/{relative}:{line}" for line in lines]
    assert not offenders, "SQL outside a store module:\n" + "\n".join(offenders)
    assert stored > 20  # (the walk found the stores' statements)


def test_every_store_module_names_a_real_module_with_sql():
    for init in sorted(SERVICES.glob("*/__init__.py")):
        for name in _store_modules(init.parent):
            module = init.parent / f"{name}.py"
            assert module.is_file(), f"{init}: STORE_MODULES names {name}, no such module"
            assert sql_calls(module.read_text()), f"{module} is a store without SQL"
    for relative, why in SQL_ELSEWHERE.items():
        assert sql_calls((SERVICES / relative).read_text()) and why


def test_the_sql_check_finds_a_statement_in_a_use_case():
    snippet = """
from pms.db.statements import Statement

LOCK = Statement.text("x.lock", both="SELECT 1")

def use_case(db, row):
    db.execute_sql("UPDATE room SET status = 'DIRTY'")
    row.save()                        # the models: allowed
    return Statement("x", None)
"""
    assert sql_calls(snippet) == [4, 7, 9]
