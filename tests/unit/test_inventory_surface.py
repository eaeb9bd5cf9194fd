"""Every write of an inventory night goes through the inventory package.

`inventory_day` carries SPEC's availability rule (sold + held never above the rooms for sale),
so only pms.services.inventory (and the stored functions it applies, pms/db/sql) may insert,
update or delete its rows: groups move a block's held rooms through
`pms.services.inventory.holds`, reservations take and release through `inventory`. The check
reads the source: a peewee write on `InventoryDay` (or a name bound to it) and SQL text that
writes `inventory_day`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWNER = ROOT / "pms" / "services" / "inventory"
WRITES = {"update", "insert", "insert_many", "insert_from", "replace", "replace_many", "delete",
          "bulk_create", "bulk_update", "delete_instance", "save", "create"}
SQL_WRITE = re.compile(r"\b(UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+inventory_day\b", re.I)


def writes(source: str) -> list[str]:
    """The writes of inventory_day in `source`: `InventoryDay.<write>(...)`, the same through a
    local alias (`day = InventoryDay`), and SQL strings that write the table."""
    tree = ast.parse(source)
    aliases = {"InventoryDay"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases:
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in aliases \
                and node.func.attr in WRITES:
            found.append(f"line {node.lineno}: {node.func.value.id}.{node.func.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and SQL_WRITE.search(node.value):
            found.append(f"line {node.lineno}: SQL writing inventory_day")
    return found


def test_only_the_inventory_package_writes_inventory_nights():
    offenders = {}
    for path in sorted((ROOT / "pms").rglob("*.py")):
        if OWNER in path.parents or "migrations" in path.parts:
            continue
        found = writes(path.read_text())
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}, offenders


def test_the_check_sees_each_way_of_writing_a_night():
    """The control: each spelling of a write is found; reads are not."""
    assert writes("InventoryDay.update(held=1).where(x).execute()")
    assert writes("day = InventoryDay\nday.update(sold=day.sold + 1).execute()")
    assert writes("InventoryDay.insert_many(rows).execute()")
    assert writes("SQL = '''UPDATE inventory_day d SET held = 0'''")
    assert writes("SQL = 'insert into inventory_day (id) values (%s)'")
    assert not writes("InventoryDay.select().where(InventoryDay.held > 0)")
    assert not writes("SQL = 'SELECT sold FROM inventory_day'")


def test_the_inventory_package_holds_the_writes_it_took_over():
    """Groups' held rooms are moved by the inventory package's holds, not beside it."""
    holds = (OWNER / "holds.py").read_text()
    assert writes(holds), "holds.py writes InventoryDay.held"
