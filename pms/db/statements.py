"""Statements compiled once per process: SQL text built once, run many times with new values.

Building a query with peewee and compiling it to SQL costs more than running it (200-620
us per compile, several per request). A `Statement` is built ONCE per process and database kind,
either by peewee (which still describes the tables) or from SQL text, and every later call only
binds new values to the same text. Nothing is prepared on the server and no session state is
left behind (PgBouncer transaction pooling): the text goes out through
`db.execute_sql`, so each call carries the transaction's tenant and timeout settings like any
other statement, and PostgreSQL parses and plans it as usual.

Tenancy: a statement of tenant rows names the tenant explicitly, `env_id = <the env slot>`
(`param.env` in a peewee builder, `%(env)s` in text), and `run()` binds that slot from the active
tenant scope, never from the caller. A statement without the env slot must say
`tenant_free=True`. Builders run under `unscoped()`, so `TenantModel.select()` adds no filter of
whichever env happened to be active at compile time; for the same reason a compiled statement
may hold no UUID constant (it would freeze one tenant's id into every later call).

    RATES = Statement.build("rates.for_plan", lambda: (
        RateSchedule.select(RateSchedule.date, RateSchedule.amount)
        .where((RateSchedule.env_id == param.env) & (RateSchedule.rate_plan == param.plan_id))))
    for day, amount in RATES.rows(plan_id=plan.id):
        ...

    SELLABLE = Statement.text("inventory.sellable", postgres="SELECT ... WHERE env_id = %(env)s")

Values: a `uuid.UUID` is sent as its hex string (what peewee's UUIDField sends: PostgreSQL casts
it to uuid, SQLite stores it so); everything else goes to the driver as given. Rows come back as
the driver returns them (tuples); `typed_rows()` applies the selected fields' peewee
conversions for a statement peewee built.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import peewee

from pms.db.database import db
from pms.db.dialect import fast_path
from pms.db.scope import require_env, unscoped
from pms.db.stamping import compiling_statement, unstamped_updates

ENV = "env"

_TEXT_SLOT = re.compile(r"%\((\w+)\)s|%%")


class _Slot:
    """The placeholder value a `Param` compiles to (found again in peewee's parameter list)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<slot {self.name}>"


class Param(peewee.Value):
    """A named value slot in a peewee-built statement (compiled as one `%s`/`?` placeholder)."""

    def __init__(self, name: str) -> None:
        super().__init__(_Slot(name), converter=False, unpack=False)
        self.name = name


class _Params:
    """`param.plan_id` (or `param("plan_id")`) is the slot named plan_id; `param.env` the env."""

    def __getattr__(self, name: str) -> Param:
        if name.startswith("__"):
            raise AttributeError(name)
        return Param(name)

    def __call__(self, name: str) -> Param:
        return Param(name)


param = _Params()


class Compiled:
    """One statement's text for one database kind and how to fill its parameters."""

    __slots__ = ("sql", "slots", "converters")

    def __init__(self, sql: str, slots: tuple[tuple[str | None, Any], ...],
                 converters: tuple[Callable[[Any], Any] | None, ...] | None) -> None:
        self.sql = sql
        self.slots = slots          # (name, None) for a named slot, (None, value) for a constant
        self.converters = converters

    def params(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        out = []
        for name, constant in self.slots:
            if name is None:
                out.append(constant)
                continue
            try:
                value = values[name]
            except KeyError:
                raise TypeError(f"missing value for statement parameter {name!r}") from None
            out.append(value.hex if isinstance(value, uuid.UUID) else value)
        return tuple(out)


class Statement:
    """A statement built once per process and database kind; see the module docstring."""

    def __init__(self, name: str, *, build: Callable[[], peewee.Node] | None = None,
                 texts: Mapping[str, str] | None = None, tenant_free: bool = False,
                 locks: Any = None) -> None:
        if (build is None) == (texts is None):
            raise ValueError("a statement has either a peewee builder or SQL texts")
        self.name = name
        self.tenant_free = tenant_free
        self.locks = locks
        self._build = build
        self._texts = dict(texts or {})
        self._compiled: dict[type, Compiled] = {}

    @classmethod
    def build(cls, name: str, builder: Callable[[], peewee.Node], *,
              tenant_free: bool = False) -> Statement:
        """A statement peewee builds (once per database kind, on first use)."""
        return cls(name, build=builder, tenant_free=tenant_free)

    @classmethod
    def text(cls, name: str, *, postgres: str | None = None, sqlite: str | None = None,
             both: str | None = None, tenant_free: bool = False, locks: Any = None
             ) -> Statement:
        """A statement written as SQL, with `%(name)s` slots and `%%` for a literal percent
        sign; `both` when one text serves PostgreSQL and SQLite alike. `locks`: the model
        (an AggregateModel, or a function that returns it, for a module that cannot import
        the models yet) whose row each result row starts with (its columns in
        `sorted_fields` order), read FOR UPDATE: `one()` declares that row locked to the unit
        of work (`pms.db.locking.declare_locked`), as `for_update` does. A function may
        also return (model, first column) pairs: a row of each, locked, at that offset (a
        missing one, its id NULL, declares nothing)."""
        texts = {k: v for k, v in (("postgres", postgres or both), ("sqlite", sqlite or both))
                 if v is not None}
        return cls(name, texts=texts, tenant_free=tenant_free, locks=locks)

    # -- compiling ------------------------------------------------------------------------------

    def compiled(self) -> Compiled:
        """This statement for the bound database (compiled on first use, then reused)."""
        database = db.obj
        if database is None:
            raise RuntimeError("the database is not initialised (init_db)")
        kind = type(database)
        found = self._compiled.get(kind)
        if found is None:
            found = self._compile(database)
            self._check(found)
            self._compiled[kind] = found  # a race compiles twice, to the same text
        return found

    def _compile(self, database: peewee.Database) -> Compiled:
        if self._build is not None:
            # no filter of the env active at compile time (module docstring); an UPDATE sets
            # updated_at from a parameter (pms.db.stamping: a constant would be frozen here)
            with unscoped(), compiling_statement(self.name):
                query = self._build()
            sql, values = query.sql()
            slots = tuple((v.name, None) if isinstance(v, _Slot) else (None, v) for v in values)
            return Compiled(sql, slots, _converters(query))
        dialect = "postgres" if isinstance(database, peewee.PostgresqlDatabase) else "sqlite"
        text = self._texts.get(dialect)
        if text is None:
            raise RuntimeError(f"statement {self.name} has no SQL for {dialect}")
        placeholder = database.param
        names: list[str] = []

        def slot(match: re.Match[str]) -> str:
            if match.group(1) is None:  # %%: psycopg2 wants it doubled, sqlite3 does not
                return "%%" if placeholder == "%s" else "%"
            names.append(match.group(1))
            return placeholder

        unstamped = unstamped_updates(text)
        if unstamped:
            raise RuntimeError(f"statement {self.name} updates {', '.join(unstamped)} without "
                               "setting updated_at (pms.db.stamping)")
        sql = _TEXT_SLOT.sub(slot, text)
        return Compiled(sql, tuple((n, None) for n in names), None)

    def _check(self, compiled: Compiled) -> None:
        names = {n for n, _ in compiled.slots if n is not None}
        if not self.tenant_free and ENV not in names:
            raise RuntimeError(f"statement {self.name} does not name env_id = <env slot>; "
                               "declare tenant_free=True if it reads no tenant row")
        for name, constant in compiled.slots:
            if name is None and isinstance(constant, uuid.UUID | str) and _looks_like_id(constant):
                raise RuntimeError(f"statement {self.name} holds an id as a constant "
                                   f"({constant!r}): make it a parameter")

    # -- running --------------------------------------------------------------------------------

    def run(self, **values: Any) -> Any:
        """Execute with these values (the env slot comes from the active scope); the cursor."""
        compiled = self.compiled()
        if not self.tenant_free:
            if ENV in values:
                raise TypeError("the env slot is bound from the active tenant scope")
            values[ENV] = require_env()
        return db.execute_sql(compiled.sql, compiled.params(values))

    def rows(self, **values: Any) -> list[tuple[Any, ...]]:
        """Every row, as the driver returns them."""
        return self.run(**values).fetchall()

    def one(self, **values: Any) -> tuple[Any, ...] | None:
        """The first row, or None (with `locks`, its row declared locked)."""
        row = self.run(**values).fetchone()
        if self.locks is not None and row is not None:
            from pms.db.locking import declare_locked_version

            found = self.locks if isinstance(self.locks, type) else self.locks()
            for model, start in ([(found, 0)] if isinstance(found, type) else found):
                key = model._meta.primary_key
                names = [f.name for f in model._meta.sorted_fields]
                row_id = row[start + names.index(key.name)]
                if row_id is not None:  # (an outer join's missing row: nothing locked)
                    declare_locked_version(model, key.python_value(row_id),
                                           row[start + names.index("version")])
        return row

    def typed_rows(self, **values: Any) -> list[tuple[Any, ...]]:
        """Every row with each selected field's peewee conversion applied (builders only;
        expressions that are not fields come back as the driver returns them)."""
        compiled = self.compiled()
        rows = self.run(**values).fetchall()
        converters = compiled.converters
        if not converters or not any(converters):
            return rows
        return [tuple(v if c is None or v is None else c(v)
                      for c, v in zip(converters, row, strict=True)) for row in rows]


def _converters(query: peewee.Node) -> tuple[Callable[[Any], Any] | None, ...] | None:
    """The python_value of each selected column that is a plain field, else None."""
    returning = getattr(query, "_returning", None)
    if not returning:
        return None
    out: list[Callable[[Any], Any] | None] = []
    for column in returning:
        node = column.node if isinstance(column, peewee.Alias) else column
        out.append(node.python_value if isinstance(node, peewee.Field) else None)
    return tuple(out)


_HEX_ID = re.compile(r"^[0-9a-f]{32}$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                     re.I)


def _looks_like_id(value: uuid.UUID | str) -> bool:
    return isinstance(value, uuid.UUID) or bool(_HEX_ID.match(value))


# -- many new rows of the current env in few statements (inside a transaction) -----------------

def _bulk_insert_pg(model: Any, rows: list[dict[str, Any]]) -> None:
    """`bulk_insert` on PostgreSQL: one multi-row statement per 1,000 rows with psycopg2's
    execute_values (peewee's per-value SQL building cost more than the database)."""
    if not rows:
        return
    from psycopg2.extras import execute_values

    env = require_env()
    fields = [model._meta.fields[name] for name in rows[0]] + [model._meta.fields["env_id"]]
    columns = ", ".join(f'"{f.column_name}"' for f in fields)
    names = [f.name for f in fields[:-1]]
    # plain values need no peewee conversion: UUIDs as text, the rest as psycopg2 adapts them
    values = [tuple(v.hex if isinstance(v, uuid.UUID) else v for v in map(row.__getitem__, names))
              + (env.hex,) for row in rows]
    sql = f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES %s'
    execute_values(db.cursor(), sql, values, page_size=1000)


@fast_path(_bulk_insert_pg)
def bulk_insert(model: Any, rows: list[dict[str, Any]]) -> None:
    """Insert many rows of the current env, given as dicts of the same fields (inside a
    transaction): peewee's insert_many, 500 rows a statement."""
    for start in range(0, len(rows), 500):
        model.insert_many(rows[start:start + 500]).execute()
