"""The one rule of `updated_at`: every UPDATE of a row of a table that has
the column stamps it, whichever way the UPDATE is written.

- `BaseModel.save()`, `insert_statement()` and `update_statement()` stamp the row (pms.db.base);
- `Model.update(...)` (peewee's bulk UPDATE: the night audit's rooms, the inventory's days,
  a unit of work's version bump) adds `updated_at = <now>` unless the caller sets it; inside a
  compiled statement's builder (pms.db.statements) a constant would be frozen into the text, so
  there the builder must set it itself (`updated_at=param.at`) or the compile fails;
- an UPDATE written as SQL text (a `Statement.text`, a PL/pgSQL function of a migration) must
  set it: `Statement.text` refuses to compile one that does not (`unstamped_updates`), and
  tests/unit/test_updated_at_rule.py scans every SQL string of the code and every `pms_*`
  function of a migrated database.

Left out: the journals `outbox_event` and `audit_entry`, whose rows are written once and then
only marked by the relay (their own columns say when: `published_at`, `lease_until`,
`pushed_at`, `parked_at`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import peewee

UNSTAMPED_TABLES = frozenset({"outbox_event", "audit_entry"})

_COMPILING: ContextVar[str | None] = ContextVar("pms_compiling_statement", default=None)

# UPDATE [ONLY] <table> [[AS] alias] SET <assignments> (up to FROM, WHERE, RETURNING or ;)
_UPDATE_SET = re.compile(
    r'\bUPDATE\s+(?:ONLY\s+)?"?(\w+)"?(?:\s+(?:AS\s+)?(?!SET\b)"?\w+"?)?\s+SET\b(.*?)'
    r"(?=\bFROM\b|\bWHERE\b|\bRETURNING\b|;|\Z)", re.I | re.S)
_SETS_UPDATED_AT = re.compile(r'(?:^|[\s,.])"?updated_at"?\s*=', re.I)


@contextmanager
def compiling_statement(name: str) -> Iterator[None]:
    """A compiled statement's builder runs in here (pms.db.statements)."""
    token = _COMPILING.set(name)
    try:
        yield
    finally:
        _COMPILING.reset(token)


def stamps(model: type[peewee.Model]) -> bool:
    """Whether UPDATEs of `model`'s table stamp `updated_at`."""
    meta = model._meta
    return "updated_at" in meta.fields and meta.table_name not in UNSTAMPED_TABLES


def stamp_update(model: type[peewee.Model], data: Any, update: dict[str, Any],
                 now: Any) -> None:
    """Add `updated_at = now` to a `Model.update(data, **update)` that does not set it; raise
    in a compiled statement's builder instead (see the module docstring)."""
    if not stamps(model):
        return
    field = model._meta.fields["updated_at"]
    if "updated_at" in update:
        return
    if isinstance(data, dict) and any(k is field or (isinstance(k, str) and k == "updated_at")
                                      for k in data):
        return
    name = _COMPILING.get()
    if name is not None:
        raise RuntimeError(f"statement {name} updates {model._meta.table_name} without "
                           "setting updated_at: set it from a parameter (updated_at=param.at)")
    update["updated_at"] = now()


def stamped_tables() -> frozenset[str]:
    """The tables of every model whose UPDATEs stamp `updated_at`."""
    found: set[str] = set()
    stack = list(peewee.Model.__subclasses__())
    while stack:
        model = stack.pop()
        stack.extend(model.__subclasses__())
        if stamps(model):
            found.add(model._meta.table_name)
    return frozenset(found)


def unstamped_updates(sql: str, tables: frozenset[str] | None = None) -> list[str]:
    """The tables that `sql` UPDATEs without setting `updated_at` (of those that stamp it)."""
    tables = stamped_tables() if tables is None else tables
    return [table for table, sets in _UPDATE_SET.findall(sql)
            if table.lower() in tables and not _SETS_UPDATED_AT.search(sets)]
